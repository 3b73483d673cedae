"""The memory resolver (SPEC §3) and each record's effective state (E1). History windows (W11)
are in `memory.history`, status normalisation (W12) in `memory.normalisation`.

Pure and standard library only (DESIGN habit 1): records, tombstones, the clock and the
per-user secret come in as arguments, so the same inputs always give the same answer (R7).

`resolve`, `resolve_slot` and `record_states` share one decision pass (`_decide_records`,
R1–R6), a step at a time, each step handing on what it kept. The pass records one reason per
id and what excluded a record; R8 explanations and R7's `excluded` are read from that when
asked (`memory.reasons`): a resolve builds no object per excluded record. Every function does
O(n) work over dicts built once, plus at most one sort (per slot, or of the output), so a slot
of 20k versions stays linear.

Stored statuses without a `status_since` (the schema requires one for every status but
`active`) are treated as applying at every `now`: a row marked by hand without a time is
trusted rather than ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from operator import attrgetter

from conversations.domain import Context
from memory.domain import (
    REASON_EXPIRED,
    REASON_FORGOTTEN,
    REASON_LOWER_PRECEDENCE,
    REASON_NOT_YET_VALID,
    REASON_SCOPE,
    REASON_SUPERSEDED,
    RESOLVER_VERSION,
    STATE_ACTIVE,
    MemoryRecord,
    RecordState,
    Resolution,
    Tombstone,
    normalise_value,
    r6_beats,
    value_hash,
)
from memory.reasons import ACTIVE, Decisions, Exclusions, Slot, rfc3339, slot_of

__all__ = [
    "RESOLVER_REASONS",
    "at_time",
    "unique_records",
    "record_states",
    "resolve",
    "resolve_slot",
    "stable_window",
]

# The resolver's reasons in step order (R1..R6); the trace has one count for each.
RESOLVER_REASONS = (
    REASON_SCOPE,
    REASON_FORGOTTEN,
    REASON_NOT_YET_VALID,
    REASON_EXPIRED,
    REASON_SUPERSEDED,
    REASON_LOWER_PRECEDENCE,
)
_TRACE_KEYS = {reason: "excluded_" + reason.replace("-", "_") for reason in RESOLVER_REASONS}


def _applies(since: datetime | None, now: datetime) -> bool:
    """A stored status counts from its `status_since` on (see the module docstring)."""
    return since is None or since <= now


_record_id = attrgetter("id")


def unique_records(records: Iterable[MemoryRecord]) -> dict[str, MemoryRecord]:
    """R7: one row per id whatever the input order. Two *different* rows claiming one id
    cannot come from the database; if they do, the choice is still order-independent."""
    by_id: dict[str, MemoryRecord] = {}
    for record in records:
        seen = by_id.get(record.id)
        if seen is None:
            by_id[record.id] = record
        elif seen is not record and seen != record and repr(record) < repr(seen):
            by_id[record.id] = record
    return by_id


def _index_tombstones(tombstones: Iterable[Tombstone]) -> dict[str, list[Tombstone]]:
    """F3 lookups by key; each group deduplicated and ordered by id so the tombstone that
    blocks a record does not depend on input order (R7)."""
    groups: dict[str, dict[str, Tombstone]] = {}
    for tomb in tombstones:
        groups.setdefault(tomb.key, {}).setdefault(tomb.id, tomb)
    return {key: [group[i] for i in sorted(group)] for key, group in groups.items()}


def _blocking_tombstone(
    record: MemoryRecord, scope_id: str, group: list[Tombstone], secret: bytes
) -> Tombstone | None:
    """R4/F3: the first tombstone (by id) of the record's key that blocks it. The value's
    HMAC is computed only if a tombstone that could otherwise block it carries a value hash."""
    hashed: str | None = None
    for tomb in group:
        if tomb.user != record.user or (tomb.scope_id != "*" and tomb.scope_id != scope_id):
            continue
        if record.evidence_time > tomb.blocks_sources_before:
            continue
        if tomb.value_hash is not None and hashed is None:
            hashed = value_hash(secret, record.value)
        if tomb.blocks(
            user=record.user,
            key=record.key,
            scope_id=scope_id,
            evidence_time=record.evidence_time,
            hashed_value=hashed,
        ):
            return tomb
    return None


# ---------------------------------------------------------------------------------------------
# The decision pass (R1–R6); its explanations (R8) and `excluded` are `memory.reasons`'


def _decide_records(
    records: Iterable[MemoryRecord],
    now: datetime,
    context: Context | None,
    tombstones: Mapping[str, list[Tombstone]],
    many_keys: frozenset[str] | set[str],
    secret: bytes,
) -> Decisions:
    """R1–R6 for distinct records, in order, a record excluded at one step unseen by later
    ones: R1 scope (`_in_scope`; skipped without a context), R2 and R3 (`_in_time`), R4
    (`_not_blocked`), R5 and R6 (`_slot_winners`). Each step records the reason of what it
    excludes and hands on the others, each with its scope id."""
    if not isinstance(records, list | tuple):
        records = list(records)
    # One reason per id, in input order; duplicate ids are dropped here (`unique_records`),
    # and a record that reaches R6 keeps the default unless it wins.
    reasons = dict.fromkeys(map(_record_id, records), REASON_LOWER_PRECEDENCE)
    if len(reasons) != len(records):
        records = list(unique_records(records).values())
    refs: dict[str, str | datetime] = {}
    kept, scope_ids = _in_scope(records, context, reasons)
    kept, scope_ids = _in_time(kept, scope_ids, now, reasons, refs)
    kept, scope_ids, named_by = _not_blocked(kept, scope_ids, tombstones, secret, reasons, refs)
    slots = _slot_winners(kept, scope_ids, named_by, now, many_keys, reasons, refs)
    for winner, _ in slots.values():
        reasons[winner.id] = ACTIVE
    return Decisions(records, reasons, refs, slots, many_keys)


def _in_scope(
    records: Sequence[MemoryRecord], context: Context | None, reasons: dict[str, str]
) -> tuple[list[MemoryRecord], list[str]]:
    """R1 (`Context.matches`; every record passes without a context): the records that
    pass and their scope ids. The test and the scope id are made once per Scope object (the
    records of one read share them), the record's user checked against the cached one."""
    if context is None:
        return list(records), [record.scope.scope_id(record.user) for record in records]
    scopes: dict[int, tuple[str, str | None]] = {}  # id(scope) → (user, scope id if it matches)
    kept: list[MemoryRecord] = []
    scope_ids: list[str] = []
    for record in records:
        user, scope = record.user, record.scope
        hit = scopes.get(id(scope))
        if hit is None or hit[0] != user:
            matches = context.matches(scope, user)
            hit = scopes[id(scope)] = (user, scope.scope_id(user) if matches else None)
        if hit[1] is None:
            reasons[record.id] = REASON_SCOPE
        else:
            kept.append(record)
            scope_ids.append(hit[1])
    return kept, scope_ids


def _in_time(
    records: list[MemoryRecord],
    scope_ids: list[str],
    now: datetime,
    reasons: dict[str, str],
    refs: dict[str, str | datetime],
) -> tuple[list[MemoryRecord], list[str]]:
    """R2 stored `forgotten`; R3 `valid_from > now` → not-yet-valid, `valid_until <= now`
    (the boundary kept for R8) or stored `expired` since <= now → expired."""
    kept: list[MemoryRecord] = []
    kept_scope_ids: list[str] = []
    for record, scope_id in zip(records, scope_ids, strict=True):
        status = record.status
        if status == "forgotten":
            reasons[record.id] = REASON_FORGOTTEN
        elif record.valid_from > now:
            reasons[record.id] = REASON_NOT_YET_VALID
        elif (until := record.valid_until) is not None and until <= now:
            reasons[record.id] = REASON_EXPIRED
            refs[record.id] = until
        elif status == "expired" and _applies(record.status_since, now):
            reasons[record.id] = REASON_EXPIRED
        else:
            kept.append(record)
            kept_scope_ids.append(scope_id)
    return kept, kept_scope_ids


def _not_blocked(
    records: list[MemoryRecord],
    scope_ids: list[str],
    tombstones: Mapping[str, list[Tombstone]],
    secret: bytes,
    reasons: dict[str, str],
    refs: dict[str, str | datetime],
) -> tuple[list[MemoryRecord], list[str], dict[str, str]]:
    """R4 (F3, the blocking tombstone's id kept for R8), and what the records that pass
    name: every record that passed R1–R4 hides what it names in `supersedes` (R5), superseded
    or not (chains hold); the smallest naming id is kept (R7)."""
    kept: list[MemoryRecord] = []
    kept_scope_ids: list[str] = []
    named_by: dict[str, str] = {}
    for record, scope_id in zip(records, scope_ids, strict=True):
        group = tombstones.get(record.key)
        if group and (tomb := _blocking_tombstone(record, scope_id, group, secret)) is not None:
            reasons[record.id] = REASON_FORGOTTEN
            refs[record.id] = tomb.id
            continue
        kept.append(record)
        kept_scope_ids.append(scope_id)
        target = record.supersedes
        if target is not None and (target not in named_by or record.id < named_by[target]):
            named_by[target] = record.id
    return kept, kept_scope_ids, named_by


def _slot_winners(
    records: list[MemoryRecord],
    scope_ids: list[str],
    named_by: Mapping[str, str],
    now: datetime,
    many_keys: frozenset[str] | set[str],
    reasons: dict[str, str],
    refs: dict[str, str | datetime],
) -> dict[Slot, list]:
    """R5 (named by a record that passed R4, its id kept for R8, or stored `superseded`
    since <= now), then R6: one winner per scoped key / value slot (`many_keys`) by
    authority, valid_from, version, smaller id — a total order, so no winner depends on
    the order of the records. Slot → [winner, how many records reached R6 there]."""
    slots: dict[Slot, list] = {}
    for record, scope_id in zip(records, scope_ids, strict=True):
        by = named_by.get(record.id)
        if by is not None:
            reasons[record.id] = REASON_SUPERSEDED
            refs[record.id] = by
            continue
        if record.status == "superseded" and _applies(record.status_since, now):
            reasons[record.id] = REASON_SUPERSEDED
            continue
        key = record.key
        slot = (scope_id, key, normalise_value(record.value) if key in many_keys else "")
        entry = slots.get(slot)
        if entry is None:
            slots[slot] = [record, 1]
            continue
        entry[1] += 1
        if r6_beats(record, entry[0]):
            entry[0] = record
    return slots


_active_order = attrgetter("key", "id")


def resolve(
    records: Iterable[MemoryRecord],
    tombstones: Iterable[Tombstone],
    context: Context,
    *,
    many_keys: frozenset[str] | set[str] = frozenset(),
    secret: bytes = b"",
) -> Resolution:
    """Which memories are eligible for `context` at `context.now` (SPEC §3): the steps of
    `_decide_records`.

    R7: duplicates (same id) count once and input order does not matter; `active` is ordered
    by (key, id), `excluded` by id. R8: `explanations` holds an `Explanation` for every input
    id (step "R1".."R6" or "active"); details name ids, scope ids and boundaries, never a
    value. `trace` holds counts only, plus `resolver_version` and `now`. `excluded` and
    `explanations` are read from the pass's reasons when asked (`memory.reasons`, I9).
    """
    now = context.now
    decisions = _decide_records(
        records, now, context, _index_tombstones(tombstones), many_keys, secret
    )
    active = [entry[0] for entry in decisions.slots.values()]
    active.sort(key=_active_order)
    return Resolution(
        active=tuple(active),
        excluded=Exclusions((decisions.reasons,)),
        trace=_trace(decisions.reasons, len(active), now),
        explanations=decisions,
    )


def _trace(reasons: Mapping[str, str], n_active: int, now: datetime) -> dict:
    """Counts only: the candidates, the active records and the excluded by reason (step
    order), with `resolver_version` and `now`."""
    counts = Counter(reasons.values())
    trace: dict = {"candidates": len(reasons), "active": n_active}
    for reason in RESOLVER_REASONS:
        trace[_TRACE_KEYS[reason]] = counts.get(reason, 0)
    trace["resolver_version"] = RESOLVER_VERSION
    trace["now"] = rfc3339(now)
    return trace


_ACTIVE_STATE = RecordState(STATE_ACTIVE)


def _later(a: datetime, b: datetime) -> datetime:
    return a if a >= b else b


def record_states(
    records: Iterable[MemoryRecord],
    tombstones: Iterable[Tombstone],
    now: datetime,
    *,
    many_keys: frozenset[str] | set[str] = frozenset(),
    secret: bytes = b"",
) -> dict[str, RecordState]:
    """SPEC E1: each record's state at `now` in its own scope, by id — the decision pass of
    `resolve` (R2–R6) with every record's own scope as the context, so R1 always passes.
    Supersession and precedence never cross scoped keys, so every record of the scoped keys
    (value slots) asked about must be in `records`; records of several users, scopes and keys
    may be mixed.

    `state` is the reason the pass recorded (or "active"); the detail is read from what the
    pass recorded, never decided again (`_States`)."""
    index = _index_tombstones(tombstones)
    states = _States(_decide_records(records, now, None, index, many_keys, secret), index)
    return {
        record_id: _ACTIVE_STATE if reason == ACTIVE else states.of(record_id, reason)
        for record_id, reason in states.decisions.reasons.items()
    }


class _States:
    """E1's detail of the records a pass excluded, from what it recorded:
    - R2 stored forgotten: since its `status_since`; R4 a tombstone: since its `forgotten_at`;
    - R3 not-yet-valid (no since; it starts at its `valid_from`); expired since its
      `valid_until`, or its stored `status_since`;
    - R5 superseded by the record naming it, since the later of both `valid_from`s (for a
      stored mark: since its `status_since`, by the record naming it if one is given);
    - R6 lower-precedence: by the slot's winner, since the later of both `valid_from`s."""

    def __init__(self, decisions: Decisions, tombstones: Mapping[str, list[Tombstone]]):
        self.decisions = decisions
        self._tombstones = tombstones
        self._forgotten_at: dict[str, datetime] | None = None
        self._namer: dict[str, str] | None = None

    def of(self, record_id: str, reason: str) -> RecordState:
        record = self.decisions.record(record_id)
        ref = self.decisions.refs.get(record_id)
        if reason == REASON_FORGOTTEN:
            if ref is None:
                return RecordState(reason, "R2", None, record.status_since)
            return RecordState(reason, "R4", None, self.forgotten_at(ref))
        if reason == REASON_NOT_YET_VALID:
            return RecordState(reason, "R3")
        if reason == REASON_EXPIRED:
            return RecordState(reason, "R3", None, ref if ref is not None else record.status_since)
        if reason == REASON_SUPERSEDED:
            return self._superseded(record, ref)
        winner = self.decisions.slots[slot_of(record, record.scope_id, self.decisions.many_keys)]
        return RecordState(
            reason, "R6", winner[0].id, _later(winner[0].valid_from, record.valid_from)
        )

    def _superseded(self, record: MemoryRecord, by: str | None) -> RecordState:
        if by is not None:
            since = _later(self.decisions.record(by).valid_from, record.valid_from)
            return RecordState(REASON_SUPERSEDED, "R5", by, since)
        return RecordState(
            REASON_SUPERSEDED, "R5", self.namer().get(record.id), record.status_since
        )

    def forgotten_at(self, tombstone_id: str) -> datetime | None:
        if self._forgotten_at is None:
            self._forgotten_at = {
                t.id: t.forgotten_at for group in self._tombstones.values() for t in group
            }
        return self._forgotten_at.get(tombstone_id)

    def namer(self) -> dict[str, str]:
        """For a stored `superseded` mark: the smallest id of the records naming each
        target, whatever step decided them."""
        if self._namer is None:
            self._namer = {}
            for other in self.decisions.records:
                target = other.supersedes
                if target is not None and (
                    target not in self._namer or other.id < self._namer[target]
                ):
                    self._namer[target] = other.id
        return self._namer


def stable_window(
    records: Iterable[MemoryRecord], now: datetime
) -> tuple[datetime | None, datetime | None]:
    """The valid times `[lo, hi)` around `now` over which `resolve` of these records (and the
    same tombstones) answers as it does at `now`: R3 and R5 compare `now` only with a record's
    `valid_from`, `valid_until` and `status_since`, each flipping when `now` reaches it, and
    R1, R2, R4 and R6 do not look at `now`. None is unbounded."""
    lo = hi = None
    for record in records:
        for moment in (record.valid_from, record.valid_until, record.status_since):
            if moment is None:
                continue
            if moment <= now:
                if lo is None or moment > lo:
                    lo = moment
            elif hi is None or moment < hi:
                hi = moment
    return lo, hi


def at_time(resolution: Resolution, now: datetime) -> Resolution:
    """A resolution reused at another `now` of its `stable_window`: the same answer, its trace
    stamped with the new time."""
    return Resolution(
        active=resolution.active,
        excluded=resolution.excluded,
        trace={**resolution.trace, "now": rfc3339(now)},
        explanations=resolution.explanations,
    )


def resolve_slot(
    records: Iterable[MemoryRecord],
    at: datetime,
    *,
    tombstones: Iterable[Tombstone] = (),
    many: bool = False,
    secret: bytes = b"",
) -> MemoryRecord | None:
    """The winner of ONE slot at valid time `at` (R2–R6; no scope test), or None.

    Services use it for W5/W6: "the slot's winner at the new record's valid_from". All
    non-forgotten `records` must share user, scope id and key, and for a `many` key the
    value slot; mixing slots is a programming error (ValueError), since the answer would be
    ambiguous. Forgotten skeletons (value erased) may be included; R2 drops them.
    """
    unique = list(unique_records(records).values())
    slots = {
        (record.user, record.scope.scope_id(record.user), record.key, record.value_slot(many))
        for record in unique
        if record.status != "forgotten"
    }
    if len(slots) > 1:
        raise ValueError("resolve_slot takes the records of one slot")
    many_keys = frozenset(record.key for record in unique) if many else frozenset()
    decisions = _decide_records(unique, at, None, _index_tombstones(tombstones), many_keys, secret)
    for winner, _ in decisions.slots.values():
        return winner
    return None
