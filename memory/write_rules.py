"""The W-steps of an assert (SPEC §2: W3 tombstones, W4 retractions, W5 unchanged values,
W6/W7 supersession, W8 versions, W9 out-of-order writes) and of a retraction (W10) for a
batch of writes — pure, standard library only (docs/DESIGN.md, habit 1).

The shell reads, under the user's memory lock, everything the batch needs once (every stored
record of each scoped key the facts touch, the tombstones and the retraction times of their
keys), passes it in with the database clock and the user's secret, and writes back the rows
this module returns. `memory_assert` is a batch of one, so each rule has one implementation.

Writes are decided in order, each seeing what the writes before it stored (a second fact for
the same slot in one message supersedes or merges into the first, with the next version; a
fact after a retraction of its slot is born closed), so a batch stores exactly what making
the same writes one by one would. Every service that stores a memory — assert, confirm,
correct, retract, restore and the extractor's facts — decides through `plan_writes`, so W8
allocates versions in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain

from config.errors import AuthorityConflict, ValidationError
from conversations.scopes import Scope

from . import resolver
from .domain import (
    AUTHORITIES,
    AUTHORITY_RANK,
    VALUE_MAX,
    MemoryRecord,
    RecordState,
    Tombstone,
    normalise_value,
    valid_key,
    value_hash,
)

__all__ = [
    "Fact",
    "Known",
    "check_fields",
    "Outcome",
    "Retract",
    "WriteBatch",
    "WritePlan",
    "plan_writes",
]


@dataclass(frozen=True, slots=True)
class Fact:
    """One assert, already validated for shape (W1's field checks are the caller's).

    `sources` are the ids of the source messages (checked to be the user's by the caller),
    `source_time` the newest `created_at` among them (None without sources). `agent` is the
    connection writing, (id, name), empty for any other write (SPEC §15 M3): a live tombstone
    blocks its write whatever its evidence time, since only the user brings a forgotten value
    back, and the record it stores carries it as `told_by`."""

    key: str
    value: str
    scope: Scope
    authority: str
    many: bool
    confidence: float = 1.0
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    sources: tuple[str, ...] = ()
    source_time: datetime | None = None
    supersedes: str | None = None
    agent: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Retract:
    """W10 for one slot: the scoped key `(scope_id, key)`, narrowed for a `many` key to the
    value slot of `value`."""

    scope_id: str
    key: str
    many: bool
    value: str | None = None


@dataclass(frozen=True)
class Known:
    """What the shell read under the lock. `records`: every stored record (forgotten skeletons
    included) of each scoped key `(scope_id, key)` the facts touch — a scoped key with no
    record maps to an empty sequence; `retractions`: the latest W10 time per slot
    `(scope_id, key, value hash or "" for a `one` key)`."""

    records: Mapping[tuple[str, str], Sequence[MemoryRecord]]
    tombstones: Sequence[Tombstone] = ()
    retractions: Mapping[tuple[str, str, str], datetime] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer to one fact: `created`, `unchanged` (W5) or `blocked` (W3, reason
    `forgotten`); `record` as it is right after this fact (None when blocked)."""

    outcome: str
    record: MemoryRecord | None
    reason: str | None = None


@dataclass
class WritePlan:
    """What to write: new rows in insertion order (sources included), source links W5 adds to
    stored records, W5's confidence raises of stored records, W10's closed windows of stored
    records and its retraction rows. `outcomes` has one entry per write: an `Outcome` for a
    fact, the records a `Retract` closed (as they are after it, in the slot's order)."""

    outcomes: list[Outcome | list[MemoryRecord]] = field(default_factory=list)
    inserts: list[MemoryRecord] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (stored record id, message id)
    confidence: dict[str, float] = field(default_factory=dict)  # stored record id -> confidence
    # stored record id -> (valid_until, retracted_at)
    closes: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)
    # (scope_id, key, value hash or "" for a `one` key, retracted_at)
    retractions: list[tuple[str, str, str, datetime]] = field(default_factory=list)
    # E1: the state at the batch's time of every record an outcome names, as the writes left it
    states: dict[str, RecordState] = field(default_factory=dict)
    # F7.2: stored records a forget withholds that W5 gave new evidence, with its time: the
    # links to the tombstones forgotten before it are released.
    releases: list[tuple[str, datetime]] = field(default_factory=list)

    @property
    def changes_memory(self) -> bool:
        """Whether writing the plan changes any stored row (a batch may decide nothing)."""
        return bool(
            self.inserts
            or self.links
            or self.confidence
            or self.closes
            or self.retractions
            or self.releases
        )


def check_fields(*, key, value, authority, confidence, valid_from=None, valid_until=None) -> None:
    """W1: the checks of a write that need no database. Raises `ValidationError` naming the
    field."""
    if not isinstance(key, str) or not valid_key(key):
        raise ValidationError(
            "Keys are 1–120 characters of a-z, 0-9, '_', '-' and "
            "'.', with no leading, trailing or double dot.",
            field="key",
        )
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("A value must not be empty.", field="value")
    if len(value) > VALUE_MAX:
        raise ValidationError(f"At most {VALUE_MAX} characters.", field="value")
    if authority not in AUTHORITIES:
        raise ValidationError("Unknown authority.", field="authority")
    if not (0.0 <= float(confidence) <= 1.0):
        raise ValidationError("Confidence must be between 0 and 1.", field="confidence")
    if valid_from is not None and valid_until is not None and valid_until <= valid_from:
        raise ValidationError("valid_until must be after valid_from.", field="valid_until")


def _utc(value: datetime | None) -> datetime | None:
    # Stored times come back in UTC; answers built here must equal what a read gives.
    return None if value is None else value.astimezone(UTC)


def plan_writes(
    writes: Iterable[Fact | Retract],
    known: Known,
    *,
    user: str,
    now: datetime,
    secret: bytes,
    new_id: Callable[[], str],
) -> WritePlan:
    """Decide W3–W10 for `writes` in order. Raises a `DomainError` for a fact the rules
    refuse — `ValidationError` (W1, naming the field) or `AuthorityConflict` (W6) — and the
    caller then stores nothing of the batch."""
    batch = WriteBatch(known, user=user, now=now, secret=secret, new_id=new_id)
    many_keys = set()
    for write in writes:
        batch.add(write)
        if write.many:
            many_keys.add(write.key)
    plan = batch.plan
    ids = [r.id for o in plan.outcomes for r in (o if isinstance(o, list) else [o.record]) if r]
    plan.states = batch.states(ids, many_keys=frozenset(many_keys))
    return plan


class WriteBatch:
    """`plan_writes` one write at a time, for a caller that decides a write from what the
    writes before it left (the extractor's corrections, SPEC §8, target the record projected
    now). `complete_scopes` names scope ids whose every record `known` holds: a scoped key of
    theirs with no record there is empty, not unread."""

    def __init__(
        self,
        known: Known,
        *,
        user: str,
        now: datetime,
        secret: bytes,
        new_id: Callable[[], str],
        complete_scopes: Iterable[str] = (),
    ):
        self.state = _State(known, frozenset(complete_scopes))
        self.plan = WritePlan()
        self.user, self.now, self.secret, self.new_id = user, _utc(now), secret, new_id

    def add(self, write: Fact | Retract) -> Outcome | list[MemoryRecord]:
        if isinstance(write, Retract):
            outcome = _retract(write, self.state, self.plan, now=self.now, secret=self.secret)
        else:
            outcome = _decide_fact(
                write,
                self.state,
                self.plan,
                user=self.user,
                now=self.now,
                secret=self.secret,
                new_id=self.new_id,
            )
        self.plan.outcomes.append(outcome)
        return outcome

    def states(
        self, ids: Iterable[str], *, many_keys: frozenset[str] | set[str]
    ) -> dict[str, RecordState]:
        """SPEC E1: the state at the batch's time of the records `ids`, as the writes so far
        left them: the resolver's pass over every record of their scoped keys."""
        wanted = set(ids)
        if not wanted:
            return {}
        # A record an outcome names lies in a slot the batch took up; the others are searched
        # only if one is missing there.
        scoped = self.state.scoped
        slots = [scoped[slot] for slot in sorted(self.state.own)]
        if not wanted <= {r.id for found in slots for r in found}:
            slots = list(scoped.values())
        slots = [found for found in slots if any(r.id in wanted for r in found)]
        records = [r for found in slots for r in found]
        states = resolver.record_states(
            records, self.state.tombstones, self.now, many_keys=many_keys, secret=self.secret
        )
        return {i: states[i] for i in wanted if i in states}

    def records(self, key: str | None = None) -> list[MemoryRecord]:
        """Every record known (of `key`), as the writes so far left it, and every new one."""
        if key is None:
            return list(chain.from_iterable(self.state.scoped.values()))
        return [r for (_, k), found in self.state.scoped.items() if k == key for r in found]

    @property
    def changed(self) -> bool:
        """Whether a write may have changed a slot (False: `records()` holds what `known`
        held, slot by slot)."""
        return bool(self.state.own)

    def taken_up(self) -> list[MemoryRecord]:
        """The records of the slots the batch took up (`changed`), as it left them: every
        record it may have changed or added is among them."""
        scoped = self.state.scoped
        return [r for slot in self.state.own for r in scoped[slot]]

    def slots(self) -> dict[tuple[str, str], Sequence[MemoryRecord]]:
        """The records by scoped key as the writes so far left them, each slot's in version
        order (`memory.current.slots_of`); a slot may be empty. Slots the batch did not take
        up are the very sequences `known` gave."""
        return self.state.scoped


def _retract(
    write: Retract, state: _State, plan: WritePlan, *, now: datetime, secret: bytes
) -> list[MemoryRecord]:
    """W10: close, at `now`, every record of the slot that has not ended (which includes every
    record they supersede, since supersession stays within the slot), stamping retracted_at; a
    record that has not started yet gets an empty window. The time is kept for W4."""
    scoped = state.records(write.scope_id, write.key)
    wanted = normalise_value(write.value) if write.many else None
    closed = []
    for index, record in enumerate(scoped):
        if record.status == "forgotten":
            continue
        if wanted is not None and normalise_value(record.value) != wanted:
            continue
        if record.valid_until is None or record.valid_until > now:
            end = max(record.valid_from, now)
            changed = dataclasses.replace(record, valid_until=end, retracted_at=now)
            scoped[index] = changed
            if record.id in state.pending:
                plan.inserts[state.pending[record.id]] = changed
            else:
                plan.closes[record.id] = (end, now)
            closed.append(changed)
    hashed = value_hash(secret, write.value) if write.many else ""
    plan.retractions.append((write.scope_id, write.key, hashed, now))
    slot = (write.scope_id, write.key, hashed)
    if slot not in state.retractions or now > state.retractions[slot]:
        state.retractions[slot] = now
    return closed


class _State:
    """The scoped keys as the batch has changed them so far. A slot is copied when the batch
    first takes it up (`records`), so `known`'s sequences are never changed and a batch costs
    the slots it touches, not every slot known."""

    def __init__(self, known: Known, complete_scopes: frozenset[str] = frozenset()):
        self.complete_scopes = complete_scopes
        self.scoped: dict[tuple[str, str], Sequence[MemoryRecord]] = dict(known.records)
        self.own: set[tuple[str, str]] = set()  # slots taken up: this batch's own lists
        self.top: dict[tuple[str, str], int] = {}  # W8: the highest version of a slot taken up
        self.tombstones = list(known.tombstones)
        self.retractions = dict(known.retractions)
        self.pending: dict[str, int] = {}  # id of a row this batch inserts -> index in plan.inserts

    def records(self, scope_id: str, key: str) -> list[MemoryRecord]:
        """The slot's records, the batch's own list to change."""
        slot = (scope_id, key)
        found = self.scoped.get(slot)
        if found is None:
            if scope_id not in self.complete_scopes:
                raise ValueError(f"scoped key {key!r} in {scope_id!r} was not read")
            found = ()
        if slot not in self.own:
            found = self.scoped[slot] = list(found)
            self.own.add(slot)
            self.top[slot] = max((r.version for r in found), default=0)
        return found

    def replace(self, scope_id: str, key: str, record: MemoryRecord) -> None:
        records = self.records(scope_id, key)
        records[next(i for i, r in enumerate(records) if r.id == record.id)] = record


def _blocked(fact: Fact, tombstones, *, user, scope_id, evidence_time, hashed) -> bool:
    """W3 (F3): a tombstone of the key covers the write. A connection's write (`agent`) is
    covered whatever its evidence time: only the user brings a forgotten value back (§15 M3)."""
    return any(
        t.blocks(
            user=user,
            key=fact.key,
            scope_id=scope_id,
            evidence_time=min(evidence_time, t.blocks_sources_before)
            if fact.agent
            else evidence_time,
            hashed_value=hashed,
        )
        for t in tombstones
    )


def _release_of(record: MemoryRecord, added: list, evidence_time: datetime) -> list:
    """F7.2: the release a stored record's new source messages (`added`) ask for, if a forget
    withholds it: (its id, the evidence's time)."""
    return [(record.id, evidence_time)] if added and record.withheld_by else []


def _released(
    record: MemoryRecord, added: list, tombstones, evidence_time: datetime
) -> tuple[str, ...]:
    """F7.2: what still withholds `record` once messages (`added`) after a forget teach it
    again: the tombstones not forgotten before `evidence_time` (and any this state does not
    hold, which the database decides); all of them when no message is new."""
    if not record.withheld_by or not added:
        return record.withheld_by
    forgotten = {t.id: t.forgotten_at for t in tombstones if t.id in record.withheld_by}
    return tuple(
        t for t in record.withheld_by if t not in forgotten or forgotten[t] >= evidence_time
    )


def _window(fact: Fact, now: datetime) -> tuple[datetime, datetime | None, datetime]:
    """SPEC §1: the write's (valid_from, valid_until, evidence_time). Evidence time is fixed
    at write; valid_from defaults to it when there are sources, else to now."""
    valid_until = _utc(fact.valid_until)
    evidence_time = _utc(fact.source_time)
    valid_from = _utc(fact.valid_from)
    if valid_from is None:
        valid_from = evidence_time or now
        if valid_until is not None and valid_until <= valid_from:
            raise ValidationError("valid_until must be after valid_from.", field="valid_until")
    if evidence_time is None:
        evidence_time = min(valid_from, now)
    return valid_from, valid_until, evidence_time


def _retraction_close(
    retracted: datetime | None,
    *,
    valid_from: datetime,
    valid_until: datetime | None,
    evidence_time: datetime,
) -> datetime | None:
    """W4: a retracted slot stays retracted for evidence no newer than the retraction: such a
    write is born closed, at the retraction at the latest (never before its own start).
    Returns its `valid_until`, or None when the retraction does not close it."""
    if retracted is None or evidence_time > retracted:
        return None
    closed_at = max(valid_from, retracted)
    closed = closed_at if valid_until is None else min(valid_until, closed_at)
    return max(closed, valid_from)


def _slot_records(scoped: list[MemoryRecord], value: str, many: bool) -> list[MemoryRecord]:
    """The records the write competes with: the whole scoped key, or for a `many` key the
    value slot (its live records of the same normalised value)."""
    if not many:
        return scoped
    wanted = normalise_value(value)
    return [r for r in scoped if r.status != "forgotten" and normalise_value(r.value) == wanted]


def _unchanged(
    winner: MemoryRecord | None,
    fact: Fact,
    *,
    valid_from: datetime,
    valid_until: datetime | None,
    rank: int,
) -> bool:
    """W5: the write tells the winner again: same value, within its window, with no higher
    authority, superseding nothing else."""
    return (
        winner is not None
        and normalise_value(winner.value) == normalise_value(fact.value)
        and winner.valid_from <= valid_from
        and (
            winner.valid_until is None
            or (valid_until is not None and valid_until <= winner.valid_until)
        )
        and rank <= winner.authority_rank
        and fact.supersedes in (None, winner.id)
    )


def _merge(
    winner: MemoryRecord,
    fact: Fact,
    state: _State,
    plan: WritePlan,
    *,
    scope_id: str,
    evidence_time: datetime,
) -> MemoryRecord:
    """W5: an unchanged value only merges provenance (and keeps the higher confidence); new
    sources may release it from a forget that withheld it (F7.2)."""
    added = [m for m in sorted(set(fact.sources)) if m not in winner.sources]
    merged = dataclasses.replace(
        winner,
        sources=tuple(sorted({*winner.sources, *added})),
        confidence=max(winner.confidence, fact.confidence),
        withheld_by=_released(winner, added, state.tombstones, evidence_time),
    )
    if winner.id in state.pending:
        plan.inserts[state.pending[winner.id]] = merged
    else:
        plan.releases += _release_of(winner, added, evidence_time)
        plan.links += [(winner.id, m) for m in added]
        if fact.confidence > winner.confidence:
            plan.confidence[winner.id] = fact.confidence
    state.replace(scope_id, fact.key, merged)
    return merged


def _explicit_supersedes(fact: Fact, slot: list[MemoryRecord], rank: int) -> str:
    """W6: an explicit supersedes must stay within the slot and not overrule authority."""
    target = next((r for r in slot if r.id == fact.supersedes), None)
    if target is None:
        raise ValidationError("supersedes must name a record of the same slot.", field="supersedes")
    if target.authority_rank > rank:
        raise AuthorityConflict(
            f"The record to supersede has authority {target.authority}, higher than "
            f"{fact.authority}."
        )
    return target.id


def _supersedes(
    fact: Fact,
    slot: list[MemoryRecord],
    winner: MemoryRecord | None,
    *,
    rank: int,
    open_ended: bool,
) -> str | None:
    """W6/W7: the record the write supersedes: the one it names, else (for a single-valued
    key, an open-ended write) the winner whose authority is not higher."""
    if fact.supersedes is not None:
        return _explicit_supersedes(fact, slot, rank)
    if not fact.many and open_ended and winner is not None and winner.authority_rank <= rank:
        return winner.id
    return None


def _decide_fact(
    fact: Fact, state: _State, plan: WritePlan, *, user, now, secret, new_id
) -> Outcome:
    key, value, many = fact.key, fact.value, fact.many
    scope_id = fact.scope.scope_id(user)
    scoped = state.records(scope_id, key)
    valid_from, valid_until, evidence_time = _window(fact, now)
    hashed = value_hash(secret, value)
    tombstones = [t for t in state.tombstones if t.key == key]

    # W3: a tombstone blocks the write; nothing is stored, not even the value.
    if _blocked(
        fact, tombstones, user=user, scope_id=scope_id, evidence_time=evidence_time, hashed=hashed
    ):
        return Outcome("blocked", None, "forgotten")

    # W4: a retracted slot stays retracted for evidence no newer than the retraction.
    closed = _retraction_close(
        state.retractions.get((scope_id, key, hashed if many else "")),
        valid_from=valid_from,
        valid_until=valid_until,
        evidence_time=evidence_time,
    )
    born_closed = closed is not None
    if born_closed:
        valid_until = closed

    slot = _slot_records(scoped, value, many)
    winner = resolver.resolve_slot(
        slot, valid_from, tombstones=tombstones, many=many, secret=secret
    )

    # W5: an unchanged value only merges provenance (and keeps the higher confidence).
    rank = AUTHORITY_RANK[fact.authority]
    if _unchanged(winner, fact, valid_from=valid_from, valid_until=valid_until, rank=rank):
        merged = _merge(winner, fact, state, plan, scope_id=scope_id, evidence_time=evidence_time)
        return Outcome("unchanged", merged)

    # W6: store. An explicit supersedes must stay within the slot and not overrule authority.
    supersedes_id = _supersedes(
        fact, slot, winner, rank=rank, open_ended=valid_until is None and not born_closed
    )

    # W8: the next version of the scoped key (the shell holds the user's lock).
    version = state.top[(scope_id, key)] + 1
    state.top[(scope_id, key)] = version
    record = MemoryRecord(
        id=new_id(),
        user=user,
        key=key,
        value=value,
        scope=fact.scope,
        authority=fact.authority,
        valid_from=valid_from,
        recorded_at=now,
        evidence_time=evidence_time,
        version=version,
        confidence=fact.confidence,
        valid_until=valid_until,
        supersedes=supersedes_id,
        sources=tuple(sorted(set(fact.sources))),
        told_by=fact.agent,
    )
    state.pending[record.id] = len(plan.inserts)
    plan.inserts.append(record)
    scoped.append(record)
    return Outcome("created", record)
