"""The memory resolver (SPEC §3) and each record's effective state (E1). History windows (W11)
are in `memory.history`, status normalisation (W12) in `memory.normalisation`.

Pure and standard library only (DESIGN habit 1): records, tombstones, the clock and the
per-user secret come in as arguments, so the same inputs always give the same answer (R7).

`resolve` and `resolve_slot` share one decision pass (`_decide_records`, R1–R6); R8 explanations are
formatted from what that pass recorded. Every function does O(n) work over dicts built once,
plus at most one sort (per slot, or of the output), so a slot of 20k versions stays linear.

Stored statuses without a `status_since` (the schema requires one for every status but
`active`) are treated as applying at every `now`: a row marked by hand without a time is
trusted rather than ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from operator import attrgetter

from config.builders import build_slotted
from conversations.domain import Context
from memory.domain import (
    AUTHORITY_RANK,
    REASON_EXPIRED,
    REASON_FORGOTTEN,
    REASON_LOWER_PRECEDENCE,
    REASON_NOT_YET_VALID,
    REASON_SCOPE,
    REASON_SUPERSEDED,
    RESOLVER_VERSION,
    STATE_ACTIVE,
    Exclusion,
    Explanation,
    MemoryRecord,
    RecordState,
    Resolution,
    Tombstone,
    normalise_value,
    r6_beats,
    value_hash,
)

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
_MAX_RANK = max(AUTHORITY_RANK.values())
_ACTIVE = "active"

# A slot: (scope id, key, normalised value for a `many` key, else "").
_Slot = tuple[str, str, str]


def _iso(moment: datetime | None) -> str:
    """§0 time format (RFC 3339 UTC with a Z) for details and the trace."""
    if moment is None:
        return "unknown"
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


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


def _slot_of(record: MemoryRecord, scope_id: str, many_keys: frozenset[str] | set[str]) -> _Slot:
    key = record.key
    return (scope_id, key, normalise_value(record.value) if key in many_keys else "")


def _why_beats(winner: MemoryRecord, loser: MemoryRecord) -> str:
    """R8: which R6 criterion decided between two records (never their values)."""
    if winner.authority != loser.authority:
        return f"higher authority {winner.authority}"
    if winner.valid_from != loser.valid_from:
        return f"later valid_from {_iso(winner.valid_from)}"
    if winner.version != loser.version:
        return f"higher version {winner.version}"
    return "equal rank, smaller id"


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
# The decision pass (R1–R6) and its explanations (R8)


class _Decisions(Mapping):
    """What one decision pass recorded, read as R8: a read-only mapping of record id →
    `Explanation` for every record the pass saw, iterating in id order.

    The pass records, per id, its reason (or "active") and, in `refs`, what excluded it when
    that was not the record's own stored status: the blocking tombstone's id (R4), the
    superseding record's id (R5) or the `valid_until` boundary (R3); per slot, the winner
    and how many records reached R6 there. An explanation is formatted from these only
    when it is looked up: a resolve decides every record and explains at most a few."""

    __slots__ = ("reasons", "refs", "slots", "_records", "_many_keys", "_by_id")

    def __init__(self, records, reasons, refs, slots, many_keys):
        self.reasons: dict[str, str] = reasons
        self.refs: dict[str, str | datetime] = refs
        self.slots: dict[_Slot, list] = slots  # slot → [winner, records that reached R6]
        self._records = records
        self._many_keys = many_keys
        self._by_id: dict[str, MemoryRecord] | None = None

    def __getitem__(self, record_id: str) -> Explanation:
        reason = self.reasons[record_id]
        if self._by_id is None:
            self._by_id = {record.id: record for record in self._records}
        step, detail = self._format(self._by_id[record_id], reason, self.refs.get(record_id))
        return Explanation(record_id, step, reason, detail)

    def _format(self, record: MemoryRecord, reason: str, ref) -> tuple[str, str]:
        """R8: the step and the detail of a recorded decision; ids, scope ids and
        boundaries only, never a value."""
        stored = f"stored status {record.status} since {_iso(record.status_since)}"
        scope_id = record.scope.scope_id(record.user)
        if reason == REASON_SCOPE:
            return "R1", f"scope {scope_id} does not match the context"
        if reason == REASON_FORGOTTEN:
            return ("R2", stored) if ref is None else ("R4", f"blocked by tombstone {ref}")
        if reason == REASON_NOT_YET_VALID:
            return "R3", f"valid_from {_iso(record.valid_from)} > now"
        if reason == REASON_EXPIRED:
            return "R3", stored if ref is None else f"valid_until {_iso(ref)} <= now"
        if reason == REASON_SUPERSEDED:
            return "R5", stored if ref is None else f"superseded by {ref}"
        slot = _slot_of(record, scope_id, self._many_keys)
        winner, size = self.slots[slot]
        if reason == REASON_LOWER_PRECEDENCE:
            return "R6", f"lost to {winner.id} ({_why_beats(winner, record)})"
        what = "value slot" if slot[2] else "scoped key"
        return "active", f"wins {what} {slot[0]} {slot[1]} over {size - 1} other record(s)"

    def __contains__(self, record_id: object) -> bool:
        return record_id in self.reasons

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.reasons))

    def __len__(self) -> int:
        return len(self.reasons)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def _decide_records(
    records: list[MemoryRecord] | tuple[MemoryRecord, ...],
    now: datetime,
    context: Context | None,
    tombstones: Mapping[str, list[Tombstone]],
    many_keys: frozenset[str] | set[str],
    secret: bytes,
) -> _Decisions:
    """R1–R6 for distinct records, in order, a record excluded at one step unseen by later
    ones: R1 scope (`Context.matches`; skipped without a context), R2 stored `forgotten`,
    R3 time (`valid_from > now` → not-yet-valid; `valid_until <= now` or stored `expired`
    since <= now → expired), R4 tombstones (F3), R5 supersession (named by any record that
    passed R1–R4, or stored `superseded` since <= now), R6 one winner per scoped key / value
    slot (`many_keys`) by authority, valid_from, version, smaller id.

    The scope test and scope id are computed once per Scope object (the records of one read
    share them), with the record's user checked against the cached one."""
    # One reason per id, in input order; duplicate ids are dropped here (`unique_records`), and a
    # record that reaches R6 keeps the default unless it wins.
    reasons = dict.fromkeys(map(_record_id, records), REASON_LOWER_PRECEDENCE)
    if len(reasons) != len(records):
        records = list(unique_records(records).values())
    refs: dict[str, str | datetime] = {}
    scopes: dict[int, tuple[str, str, bool]] = {}
    passed: list[MemoryRecord] = []
    passed_scope: list[str] = []  # their scope ids
    named_by: dict[str, str] = {}
    for record in records:
        record_id, user, scope = record.id, record.user, record.scope
        hit = scopes.get(id(scope))
        if hit is None or hit[0] != user:
            matches = context is None or context.matches(scope, user)
            hit = scopes[id(scope)] = (user, scope.scope_id(user), matches)
        if not hit[2]:
            reasons[record_id] = REASON_SCOPE
            continue
        status = record.status
        if status == "forgotten":
            reasons[record_id] = REASON_FORGOTTEN
            continue
        if record.valid_from > now:
            reasons[record_id] = REASON_NOT_YET_VALID
            continue
        until = record.valid_until
        if until is not None and until <= now:
            reasons[record_id] = REASON_EXPIRED
            refs[record_id] = until
            continue
        if status == "expired" and _applies(record.status_since, now):
            reasons[record_id] = REASON_EXPIRED
            continue
        group = tombstones.get(record.key)
        if group:
            tomb = _blocking_tombstone(record, hit[1], group, secret)
            if tomb is not None:
                reasons[record_id] = REASON_FORGOTTEN
                refs[record_id] = tomb.id
                continue
        passed.append(record)
        passed_scope.append(hit[1])
        # R5: every record that passed R1–R4 hides what it names, superseded or not (chains
        # hold); the smallest corrector id is named (R7).
        target = record.supersedes
        if target is not None:
            current = named_by.get(target)
            if current is None or record_id < current:
                named_by[target] = record_id

    # R5, then R6 by a total order, so no winner depends on the order of the survivors.
    slots: dict[_Slot, list] = {}
    for record, scope_id in zip(passed, passed_scope, strict=True):
        record_id = record.id
        by = named_by.get(record_id)
        if by is not None:
            reasons[record_id] = REASON_SUPERSEDED
            refs[record_id] = by
            continue
        if record.status == "superseded" and _applies(record.status_since, now):
            reasons[record_id] = REASON_SUPERSEDED
            continue
        slot = _slot_of(record, scope_id, many_keys)
        entry = slots.get(slot)
        if entry is None:
            slots[slot] = [record, 1]
        else:
            entry[1] += 1
            if r6_beats(record, entry[0]):
                entry[0] = record
    for winner, _ in slots.values():
        reasons[winner.id] = _ACTIVE
    return _Decisions(records, reasons, refs, slots, many_keys)


def _active_order(record: MemoryRecord) -> tuple[str, str]:
    return (record.key, record.id)


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
    value. `trace` holds counts only, plus `resolver_version` and `now`.
    """
    now = context.now
    if not isinstance(records, list | tuple):
        records = list(records)
    decisions = _decide_records(
        records, now, context, _index_tombstones(tombstones), many_keys, secret
    )
    reasons = decisions.reasons
    active = sorted([entry[0] for entry in decisions.slots.values()], key=_active_order)
    excluded_ids = [i for i, reason in reasons.items() if reason != _ACTIVE]
    excluded_ids.sort()  # already in id order when the input was: O(n)
    excluded = build_slotted(
        Exclusion,
        {"id": excluded_ids, "reason": list(map(reasons.__getitem__, excluded_ids))},
        len(excluded_ids),
    )

    counts = Counter(reasons.values())
    trace: dict = {"candidates": len(reasons), "active": len(active)}
    for reason in RESOLVER_REASONS:
        trace[_TRACE_KEYS[reason]] = counts.get(reason, 0)
    trace["resolver_version"] = RESOLVER_VERSION
    trace["now"] = _iso(now)
    return Resolution(
        active=tuple(active), excluded=tuple(excluded), trace=trace, explanations=decisions
    )


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
    pass recorded, never decided again:
    - R2 stored forgotten: since its `status_since`; R4 a tombstone: since its `forgotten_at`;
    - R3 not-yet-valid (no since; it starts at its `valid_from`); expired since its
      `valid_until`, or its stored `status_since`;
    - R5 superseded by the record naming it, since the later of both `valid_from`s (for a
      stored mark: since its `status_since`, by the record naming it if one is given);
    - R6 lower-precedence: by the slot's winner, since the later of both `valid_from`s."""
    if not isinstance(records, list | tuple):
        records = list(records)
    index = _index_tombstones(tombstones)
    decisions = _decide_records(records, now, None, index, many_keys, secret)
    by_id = {record.id: record for record in decisions._records}
    forgotten_at = {t.id: t.forgotten_at for group in index.values() for t in group}
    namer: dict[str, str] = {}
    refs = decisions.refs
    states: dict[str, RecordState] = {}
    for record_id, reason in decisions.reasons.items():
        if reason == _ACTIVE:
            states[record_id] = _ACTIVE_STATE
            continue
        record = by_id[record_id]
        ref = refs.get(record_id)
        if reason == REASON_FORGOTTEN:
            state = (
                RecordState(reason, "R2", None, record.status_since)
                if ref is None
                else RecordState(reason, "R4", None, forgotten_at.get(ref))
            )
        elif reason == REASON_NOT_YET_VALID:
            state = RecordState(reason, "R3")
        elif reason == REASON_EXPIRED:
            state = RecordState(reason, "R3", None, ref if ref is not None else record.status_since)
        elif reason == REASON_SUPERSEDED:
            if ref is not None:
                state = RecordState(
                    reason, "R5", ref, _later(by_id[ref].valid_from, record.valid_from)
                )
            else:
                if not namer:
                    for other in by_id.values():
                        target = other.supersedes
                        if target is not None and (target not in namer or other.id < namer[target]):
                            namer[target] = other.id
                state = RecordState(reason, "R5", namer.get(record_id), record.status_since)
        else:  # R6
            winner = decisions.slots[_slot_of(record, record.scope_id, many_keys)][0]
            state = RecordState(
                reason, "R6", winner.id, _later(winner.valid_from, record.valid_from)
            )
        states[record_id] = state
    return states


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
        trace={**resolution.trace, "now": _iso(now)},
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
