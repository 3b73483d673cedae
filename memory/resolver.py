"""The memory resolver (SPEC §3), history windows (W11) and status normalisation (W12).

Pure and standard library only (DESIGN habit 1): records, tombstones, the clock and the
per-user secret come in as arguments, so the same inputs always give the same answer (R7).

Hot-path shape: every function does O(n) work over dicts built once, plus at most one sort
(per slot, or of the output); nothing scans the record list per record, so a slot with tens of
thousands of versions stays linear.

Stored statuses without a `status_since` (the schema requires one for every status but
`active`) are treated as applying at every `now`: a row marked by hand without a time is
trusted rather than ignored.
"""

from __future__ import annotations

import gc
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from itertools import repeat
from operator import attrgetter

from memory.domain import (
    AUTHORITY_RANK,
    REASON_EXPIRED,
    REASON_FORGOTTEN,
    REASON_LOWER_PRECEDENCE,
    REASON_NOT_YET_VALID,
    REASON_SCOPE,
    REASON_SUPERSEDED,
    RESOLVER_VERSION,
    Context,
    Exclusion,
    Explanation,
    MemoryRecord,
    Resolution,
    Tombstone,
    normalise_value,
    value_hash,
)

__all__ = [
    "RESOLVER_REASONS",
    "StatusChange",
    "apply_changes",
    "effective_ends",
    "history_order",
    "plan_normalisation",
    "resolve",
    "resolve_slot",
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


def _iso(moment: datetime | None) -> str:
    """§0 time format (RFC 3339 UTC with a Z) for details and the trace."""
    if moment is None:
        return "unknown"
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _applies(since: datetime | None, now: datetime) -> bool:
    """A stored status counts from its `status_since` on (see the module docstring)."""
    return since is None or since <= now


def _dedupe(records: Iterable[MemoryRecord]) -> dict[str, MemoryRecord]:
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


def _beats(a: MemoryRecord, b: MemoryRecord) -> bool:
    """R6 order: higher authority, then later valid_from, then higher version, then the
    smaller id (a deterministic tie-break, not a business rule)."""
    rank_a, rank_b = AUTHORITY_RANK[a.authority], AUTHORITY_RANK[b.authority]
    if rank_a != rank_b:
        return rank_a > rank_b
    if a.valid_from != b.valid_from:
        return a.valid_from > b.valid_from
    if a.version != b.version:
        return a.version > b.version
    return a.id < b.id


def _why_beats(winner: MemoryRecord, loser: MemoryRecord) -> str:
    """R8: which R6 criterion decided between two records (never their values)."""
    if winner.authority != loser.authority:
        return f"higher authority {winner.authority}"
    if winner.valid_from != loser.valid_from:
        return f"later valid_from {_iso(winner.valid_from)}"
    if winner.version != loser.version:
        return f"higher version {winner.version}"
    return "equal rank, smaller id"


def _index_tombstones(tombstones: Iterable[Tombstone]) -> dict[tuple[str, str], list[Tombstone]]:
    """F3 lookups by (user, key); each group deduplicated and ordered by id so the tombstone
    named in an explanation does not depend on input order (R7)."""
    groups: dict[tuple[str, str], dict[str, Tombstone]] = {}
    for tomb in tombstones:
        groups.setdefault((tomb.user, tomb.key), {}).setdefault(tomb.id, tomb)
    return {k: [group[i] for i in sorted(group)] for k, group in groups.items()}


def _blocking_tombstone(
    record: MemoryRecord, scope_id: str, group: list[Tombstone], secret: bytes
) -> Tombstone | None:
    """R4/F3. The value's HMAC is computed only if a tombstone that could otherwise block
    this record carries a value hash."""
    hashed: str | None = None
    for tomb in group:
        if tomb.scope_id != "*" and tomb.scope_id != scope_id:
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


# A decision: (step, reason, detail).
_Decision = tuple[str, str, str]


def _decide(
    candidates: list[tuple[MemoryRecord, str]],
    tomb_index: Mapping[tuple[str, str], list[Tombstone]],
    now: datetime,
    many_keys: frozenset[str] | set[str],
    secret: bytes,
    out: dict[str, _Decision],
) -> list[MemoryRecord]:
    """R2–R6 for records that passed R1 (each paired with its scope id). Writes one decision
    per excluded record into `out` and returns the winners, one per slot."""
    # R2 forgotten, R3 time, R4 tombstones: each record alone, in that order.
    passed: list[tuple[MemoryRecord, str]] = []
    for record, scope_id in candidates:
        status = record.status
        if status == "forgotten":
            out[record.id] = (
                "R2",
                REASON_FORGOTTEN,
                f"stored status forgotten since {_iso(record.status_since)}",
            )
            continue
        if record.valid_from > now:
            out[record.id] = (
                "R3",
                REASON_NOT_YET_VALID,
                f"valid_from {_iso(record.valid_from)} > now",
            )
            continue
        until = record.valid_until
        if until is not None and until <= now:
            out[record.id] = ("R3", REASON_EXPIRED, f"valid_until {_iso(until)} <= now")
            continue
        if status == "expired" and _applies(record.status_since, now):
            out[record.id] = (
                "R3",
                REASON_EXPIRED,
                f"stored status expired since {_iso(record.status_since)}",
            )
            continue
        group = tomb_index.get((record.user, record.key))
        if group:
            tomb = _blocking_tombstone(record, scope_id, group, secret)
            if tomb is not None:
                out[record.id] = ("R4", REASON_FORGOTTEN, f"blocked by tombstone {tomb.id}")
                continue
        passed.append((record, scope_id))

    # R5: every record that passed R1–R4 hides what it names, superseded or not (chains
    # hold). One dict of targets, built once; the smallest corrector id is named (R7).
    named_by: dict[str, str] = {}
    for record, _ in passed:
        target = record.supersedes
        if target is not None:
            current = named_by.get(target)
            if current is None or record.id < current:
                named_by[target] = record.id

    survivors: list[tuple[MemoryRecord, tuple[str, str, str]]] = []
    for record, scope_id in passed:
        by = named_by.get(record.id)
        if by is not None:
            out[record.id] = ("R5", REASON_SUPERSEDED, f"superseded by {by}")
            continue
        if record.status == "superseded" and _applies(record.status_since, now):
            out[record.id] = (
                "R5",
                REASON_SUPERSEDED,
                f"stored status superseded since {_iso(record.status_since)}",
            )
            continue
        slot_value = normalise_value(record.value) if record.key in many_keys else ""
        survivors.append((record, (scope_id, record.key, slot_value)))

    # R6: one winner per scoped key (per value slot for a many key), by a total order.
    best: dict[tuple[str, str, str], MemoryRecord] = {}
    sizes: dict[tuple[str, str, str], int] = {}
    for record, slot in survivors:
        current = best.get(slot)
        if current is None or _beats(record, current):
            best[slot] = record
        sizes[slot] = sizes.get(slot, 0) + 1

    winners: list[MemoryRecord] = []
    for record, slot in survivors:
        winner = best[slot]
        if winner.id == record.id:
            winners.append(record)
            others = sizes[slot] - 1
            what = "value slot" if slot[2] else "scoped key"
            out[record.id] = (
                "active",
                "active",
                f"wins {what} {slot[0]} {slot[1]} over {others} other record(s)",
            )
        else:
            out[record.id] = (
                "R6",
                REASON_LOWER_PRECEDENCE,
                f"lost to {winner.id} ({_why_beats(winner, record)})",
            )
    return winners


_new_object = object.__new__
_SLOTTED: dict[type, dict | None] = {}


def _slot_setters(cls) -> dict | None:
    """The slot setters of a slots dataclass whose instances can be built field by field
    exactly as its generated `__init__` would build them (every field set through
    `__init__`, no `__post_init__`), or None."""
    if cls not in _SLOTTED:
        setters = None
        params = getattr(cls, "__dataclass_params__", None)
        if params is not None and params.init and not hasattr(cls, "__post_init__"):
            fields = dataclass_fields(cls)
            names = tuple(f.name for f in fields)
            if all(f.init for f in fields) and getattr(cls, "__slots__", None) == names:
                setters = {name: getattr(getattr(cls, name, None), "__set__", None) for name in names}
                if None in setters.values():
                    setters = None
        _SLOTTED[cls] = setters
    return _SLOTTED[cls]


def build_slotted(cls, columns: Mapping[str, Iterable], n: int) -> list:
    """`n` instances of the dataclass `cls`, field values given column by column (one
    iterable per field, every field given), equal to `cls(**fields)` for each row.

    The hot paths build one frozen record per row or per excluded record; a frozen
    dataclass's generated `__init__` makes one `object.__setattr__` call per field, which made
    construction the largest cost of a resolve. For a slots dataclass that only stores its
    fields, each column is stored through its slot descriptor in C, with no Python frame per
    instance; any other class is constructed normally."""
    setters = _slot_setters(cls)
    if setters is None or set(columns) != set(setters):
        names = list(columns)
        return [cls(**dict(zip(names, row, strict=True)))
                for row in zip(*columns.values(), strict=False)]
    objects = list(map(_new_object, repeat(cls, n)))
    for name, column in columns.items():
        deque(map(setters[name], objects, column), maxlen=0)
    return objects


def _exclusions(ids: list[str], reasons: list[str]) -> tuple[Exclusion, ...]:
    return tuple(build_slotted(Exclusion, {"id": ids, "reason": reasons}, len(ids)))


class _Explanations(Mapping):
    """R8 on demand: a read-only mapping of record id → `Explanation`, equal to (and
    iterating like) the dict of every input id in id order.

    The resolver records one reason per id while it decides; the step and the detail text are
    derived from that reason and the indexes the decision used only when an id is looked up.
    A resolve answers many records and explains at most one, so formatting a detail (and
    allocating an `Explanation`) for every record would cost more than deciding it."""

    __slots__ = ("_decisions", "_detail", "_cache", "_order")

    def __init__(self, decisions: dict[str, str], detail):
        self._decisions = decisions
        self._detail = detail
        self._cache: dict[str, Explanation] = {}
        self._order: list[str] | None = None

    def __getitem__(self, record_id: str) -> Explanation:
        hit = self._cache.get(record_id)
        if hit is None:
            reason = self._decisions[record_id]
            step, detail = self._detail(record_id, reason)
            hit = Explanation(record_id, step, reason, detail)
            self._cache[record_id] = hit
        return hit

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._decisions

    def __iter__(self):
        if self._order is None:
            self._order = sorted(self._decisions)
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._decisions)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


# The reason of a winner in the per-record decisions.
_ACTIVE = "active"


def _active_order(record: MemoryRecord) -> tuple[str, str]:
    return (record.key, record.id)


_record_id = attrgetter("id")


def resolve(
    records: Iterable[MemoryRecord],
    tombstones: Iterable[Tombstone],
    context: Context,
    *,
    many_keys: frozenset[str] | set[str] = frozenset(),
    secret: bytes = b"",
) -> Resolution:
    """Which memories are eligible for `context` at `context.now` (SPEC §3).

    See `_resolve` for the steps. The answer holds one `Exclusion` per excluded record, all
    alive until the function returns, so CPython's cyclic garbage collector (which cannot
    free any of them) would otherwise walk the whole heap about once per resolve of a large
    user — most of the time of a 100k-record resolve. It is paused for the call (and only
    resumed if this call paused it); nothing here creates reference cycles.
    """
    small = isinstance(records, list | tuple) and len(records) < _GC_PAUSE_FROM
    if small:
        return _resolve(records, tombstones, context, many_keys=many_keys, secret=secret)
    with gc_paused():
        return _resolve(records, tombstones, context, many_keys=many_keys, secret=secret)


# Below this many records a resolve allocates too little for a collection to matter.
_GC_PAUSE_FROM = 2_000


@contextmanager
def gc_paused():
    """Pause CPython's cyclic garbage collector while a block builds many objects that all
    stay alive until it ends (so a collection could free none of them, yet each one walks
    them all). Resumed only if this block paused it, so nesting is harmless; objects are
    still freed by reference counting meanwhile."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _resolve(
    records: Iterable[MemoryRecord],
    tombstones: Iterable[Tombstone],
    context: Context,
    *,
    many_keys: frozenset[str] | set[str] = frozenset(),
    secret: bytes = b"",
) -> Resolution:
    """Which memories are eligible for `context` at `context.now` (SPEC §3).

    Steps in order, a record excluded at one step unseen by later ones:
    R1 scope (`Context.matches`), R2 stored `forgotten`, R3 time (`valid_from > now` →
    not-yet-valid; `valid_until <= now` or stored `expired` since <= now → expired),
    R4 tombstones (F3, `Tombstone.blocks`; the value HMAC only when needed), R5 supersession
    (named by any record that passed R1–R4, or stored `superseded` since <= now), R6 one
    winner per scoped key / value slot (`many_keys`) by authority, valid_from, version,
    smaller id.

    R7: duplicates (same id) count once and input order does not matter; `active` is ordered
    by (key, id), `excluded` by id. R8: `explanations` holds an `Explanation` for every input
    id (step "R1".."R6" or "active"); details name ids, scope ids and boundaries, never a
    value. `trace` holds counts only, plus `resolver_version` and `now`.

    Hot path (see bench/): one pass for R1–R4 (collecting R5's targets), one for R5–R6, one
    reason string per record and no per-record formatting or objects beyond the
    `Exclusion`s the answer holds. Explanations are derived on demand (`_Explanations`) from
    the same indexes, so they are exactly what the decision was.
    """
    now = context.now
    if not isinstance(records, list | tuple):
        records = list(records)
    # One reason per id, in input order (an input already in id order then sorts in O(n)).
    # Records that reach R6 keep the default and winners are marked active at the end.
    decision: dict[str, str] = dict.fromkeys(map(_record_id, records), REASON_LOWER_PRECEDENCE)
    if len(decision) != len(records):
        records = list(_dedupe(records).values())
    tomb_index = _index_tombstones(tombstones)
    tomb_keys = {key for _, key in tomb_index}
    ctx_user = context.user

    # R1 scope, then R2–R4 for each record alone. The scope test and the scope id are
    # computed once per distinct scope: cached by object identity first (the records of one
    # read share their Scope objects), by value for a new object or another user's record.
    by_value: dict[tuple, tuple[bool, str]] = {}
    by_object: dict[int, tuple[bool, str]] = {}
    passed: list[MemoryRecord] = []
    passed_scope: list[str] = []
    named_by: dict[str, str] = {}
    for record in records:
        scope = record.scope
        user = record.user
        if user == ctx_user:
            hit = by_object.get(id(scope))
            if hit is None:
                hit = by_value.get((scope, user))
                if hit is None:
                    hit = (context.matches(scope, user), scope.scope_id(user))
                    by_value[(scope, user)] = hit
                by_object[id(scope)] = hit
        else:
            hit = by_value.get((scope, user))
            if hit is None:
                hit = (context.matches(scope, user), scope.scope_id(user))
                by_value[(scope, user)] = hit
        if not hit[0]:
            decision[record.id] = REASON_SCOPE
            continue
        status = record.status
        if status == "forgotten":
            decision[record.id] = REASON_FORGOTTEN
            continue
        if record.valid_from > now:
            decision[record.id] = REASON_NOT_YET_VALID
            continue
        until = record.valid_until
        if until is not None and until <= now:
            decision[record.id] = REASON_EXPIRED
            continue
        if status == "expired" and _applies(record.status_since, now):
            decision[record.id] = REASON_EXPIRED
            continue
        if record.key in tomb_keys:
            group = tomb_index.get((user, record.key))
            if group and _blocking_tombstone(record, hit[1], group, secret) is not None:
                decision[record.id] = REASON_FORGOTTEN
                continue
        passed.append(record)
        passed_scope.append(hit[1])
        # R5: every record that passed R1–R4 hides what it names, superseded or not (chains
        # hold); the smallest corrector id is named (R7).
        target = record.supersedes
        if target is not None:
            current = named_by.get(target)
            if current is None or record.id < current:
                named_by[target] = record.id

    # R5, then R6: one winner per scoped key (per value slot for a many key), by a total
    # order, so the winner does not depend on the order of the survivors.
    best: dict[tuple[str, str, str], MemoryRecord] = {}
    for record, scope_id in zip(passed, passed_scope, strict=False):
        record_id = record.id
        if record_id in named_by:
            decision[record_id] = REASON_SUPERSEDED
            continue
        if record.status == "superseded" and _applies(record.status_since, now):
            decision[record_id] = REASON_SUPERSEDED
            continue
        key = record.key
        slot = (scope_id, key, normalise_value(record.value) if key in many_keys else "")
        current = best.get(slot)
        if current is None or _beats(record, current):
            best[slot] = record
    for record in best.values():
        decision[record.id] = _ACTIVE

    winners = sorted(best.values(), key=_active_order)
    excluded_ids = [i for i, reason in decision.items() if reason is not _ACTIVE]
    excluded_ids.sort()
    excluded = _exclusions(excluded_ids, list(map(decision.__getitem__, excluded_ids)))

    counts = Counter(decision.values())
    trace: dict = {"candidates": len(decision), "active": len(winners)}
    for reason in RESOLVER_REASONS:
        trace[_TRACE_KEYS[reason]] = counts.get(reason, 0)
    trace["resolver_version"] = RESOLVER_VERSION
    trace["now"] = _iso(now)

    sizes: dict[tuple[str, str, str], int] = {}

    def slot_of(record: MemoryRecord) -> tuple[str, str, str]:
        key = record.key
        return (
            record.scope.scope_id(record.user),
            key,
            normalise_value(record.value) if key in many_keys else "",
        )

    by_id: dict[str, MemoryRecord] = {}

    def detail(record_id: str, reason: str) -> tuple[str, str]:
        """R8 for one record: the step and the detail of the decision already made."""
        if not by_id:
            by_id.update((record.id, record) for record in records)
        record = by_id[record_id]
        if reason == REASON_SCOPE:
            return "R1", f"scope {record.scope.scope_id(record.user)} does not match the context"
        if reason == REASON_FORGOTTEN:
            if record.status == "forgotten":
                return "R2", f"stored status forgotten since {_iso(record.status_since)}"
            group = tomb_index[(record.user, record.key)]
            tomb = _blocking_tombstone(record, record.scope.scope_id(record.user), group, secret)
            return "R4", f"blocked by tombstone {tomb.id}"
        if reason == REASON_NOT_YET_VALID:
            return "R3", f"valid_from {_iso(record.valid_from)} > now"
        if reason == REASON_EXPIRED:
            until = record.valid_until
            if until is not None and until <= now:
                return "R3", f"valid_until {_iso(until)} <= now"
            return "R3", f"stored status expired since {_iso(record.status_since)}"
        if reason == REASON_SUPERSEDED:
            by = named_by.get(record_id)
            if by is not None:
                return "R5", f"superseded by {by}"
            return "R5", f"stored status superseded since {_iso(record.status_since)}"
        slot = slot_of(record)
        winner = best[slot]
        if reason == REASON_LOWER_PRECEDENCE:
            return "R6", f"lost to {winner.id} ({_why_beats(winner, record)})"
        if not sizes:
            # Slot sizes only explain a winner: counted once, on first use.
            for other_id, other_reason in decision.items():
                if other_reason is _ACTIVE or other_reason == REASON_LOWER_PRECEDENCE:
                    other = slot_of(by_id[other_id])
                    sizes[other] = sizes.get(other, 0) + 1
        what = "value slot" if slot[2] else "scoped key"
        return "active", f"wins {what} {slot[0]} {slot[1]} over {sizes[slot] - 1} other record(s)"

    return Resolution(
        active=tuple(winners),
        excluded=excluded,
        trace=trace,
        explanations=_Explanations(decision, detail),
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
    by_id = _dedupe(records)
    slots = set()
    candidates: list[tuple[MemoryRecord, str]] = []
    for record in by_id.values():
        scope_id = record.scope.scope_id(record.user)
        if record.status != "forgotten":
            slots.add((record.user, scope_id, record.key, record.value_slot(many)))
        candidates.append((record, scope_id))
    if len(slots) > 1:
        raise ValueError("resolve_slot takes the records of one slot")
    many_keys = frozenset(r.key for r in by_id.values()) if many else frozenset()
    winners = _decide(candidates, _index_tombstones(tombstones), at, many_keys, secret, {})
    return winners[0] if winners else None


# ---------------------------------------------------------------------------------------------
# History (W11)


def _history_key(record: MemoryRecord) -> tuple:
    return (record.valid_from, record.version, record.id)


def history_order(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """W11: records in `valid_from` order, then version (then id, only so that equal pairs
    in bad data still sort the same way every time). Duplicates count once."""
    return sorted(_dedupe(records).values(), key=_history_key)


def effective_ends(
    records: Iterable[MemoryRecord], *, many: bool = False
) -> dict[str, datetime | None]:
    """W11: the derived (never stored) end of each record of a scoped key: the earliest of

    - its own `valid_until`,
    - the `valid_from` of the first open-ended record that supersedes it,
    - the `valid_from` of the earliest later (by (valid_from, version)) open-ended record of
      the same slot (value slot for a `many` key) with at least its authority,

    never before its own `valid_from`; None means open.

    The record a correction supersedes never counts as a "later record" cutting that
    correction (it can only happen when a correction starts before what it corrects, e.g. a
    user correcting a future-dated value): R5 hides it whenever the correction is valid, so
    cutting the correction there would show no current value while the resolver has one.

    Forgotten records (F2 skeletons) neither get cut by nor cut others: a forget is not a
    correction, so it must not shorten the window of a record that is still in force, and
    the skeleton keeps the window it had (its own `valid_until`). A record with a window of
    its own (`valid_until` set) is not open-ended and cuts nothing: once it ends the older
    value is current again (W9).

    Linear: one dict of supersedes targets, one sort per slot and one backward pass keeping
    the earliest later open-ended `valid_from` per authority rank.
    """
    by_id = _dedupe(records)

    first_correction: dict[str, datetime] = {}
    for record in by_id.values():
        target = record.supersedes
        if target is None or record.valid_until is not None or record.status == "forgotten":
            continue
        current = first_correction.get(target)
        if current is None or record.valid_from < current:
            first_correction[target] = record.valid_from

    slots: dict[tuple[str, str, str], list[MemoryRecord]] = {}
    for record in by_id.values():
        slot = (record.scope.scope_id(record.user), record.key, record.value_slot(many))
        slots.setdefault(slot, []).append(record)

    ends: dict[str, datetime | None] = {}
    for group in slots.values():
        group.sort(key=_history_key)
        # earliest[rank]: the two earliest (valid_from, id) of later open-ended records of
        # exactly that authority rank (those behind the cursor of the backward pass). Two,
        # because the record a correction supersedes is skipped as its cutter.
        earliest: list[tuple[tuple[datetime, str], ...]] = [()] * (_MAX_RANK + 1)
        for record in reversed(group):
            own = record.valid_until
            if record.status == "forgotten":
                ends[record.id] = (
                    record.valid_from if own is not None and own < record.valid_from else own
                )
                continue
            end = own
            corrected = first_correction.get(record.id)
            if corrected is not None and (end is None or corrected < end):
                end = corrected
            rank = AUTHORITY_RANK[record.authority]
            target = record.supersedes
            for entries in earliest[rank:]:
                for later, later_id in entries:
                    if later_id != target:
                        if end is None or later < end:
                            end = later
                        break
            if end is not None and end < record.valid_from:
                end = record.valid_from
            ends[record.id] = end
            if own is None:
                # Going backwards, this is the earliest open-ended record seen so far.
                earliest[rank] = ((record.valid_from, record.id), *earliest[rank][:1])
    return ends


# ---------------------------------------------------------------------------------------------
# Normalisation (W12)


@dataclass(frozen=True, slots=True)
class StatusChange:
    """W12: one stored status to write (`expired` or `superseded`) and since when."""

    id: str
    status: str
    status_since: datetime


def _chain_depths(by_id: Mapping[str, MemoryRecord]) -> tuple[dict[str, int], set[str]]:
    """Depth of each record in its supersedes chain (0 = supersedes nothing known), and the
    ids that sit on a cycle (impossible through the services, tolerated here). Iterative, so a
    chain of 20k versions neither recurses nor rescans."""
    depth: dict[str, int] = {}
    cyclic: set[str] = set()
    for start in by_id:
        if start in depth:
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        current: str | None = start
        base = -1
        while current is not None:
            if current in depth:
                base = depth[current]
                break
            if current in on_path:
                loop_start = on_path[current]
                for member in path[loop_start:]:
                    cyclic.add(member)
                    depth[member] = 0
                path = path[:loop_start]
                base = 0
                break
            record = by_id.get(current)
            if record is None:
                break
            on_path[current] = len(path)
            path.append(current)
            current = record.supersedes
        for member in reversed(path):
            base += 1
            depth[member] = base
    return depth, cyclic


def plan_normalisation(records: Iterable[MemoryRecord], now: datetime) -> list[StatusChange]:
    """W12: the stored statuses a maintenance run may write at `now`, in a safe order.

    Pass every record of the scoped keys concerned (the supersedes chains must be complete).

    - `expired` since `valid_until`, for a record whose `valid_until <= now`;
    - `superseded` since the earliest `valid_from` of an open-ended correction (a record
      naming it in `supersedes`) whose stored status is `active` or `superseded` and whose
      `valid_from <= now`.

    Only rows stored `active` change: `forgotten` rows are never touched and a marked row is
    never re-marked, so a plan applied (wholly, or any prefix of it) and planned again at the
    same `now` gives []. If both marks apply, the one with the earlier `status_since` is
    written (`expired` on a tie): it hides the row from "skip marked rows" queries soonest.

    Why this never changes a resolution (R1–R6, any `now`), even when the database skips rows
    marked `superseded`/`expired` with `status_since <= now`:

    - `expired` since `valid_until` is exactly R3's own `valid_until <= now` test, and an
      expired row hides nothing (it fails R3), so it can be skipped.
    - A stored `superseded` since s = C.valid_from only repeats R5: for `now >= s` the
      open-ended, not forgotten correction C passes R1–R4 whenever the record does. R4 is the
      one step that could tell them apart, so a correction whose `evidence_time` is older than
      the record's is not used: a tombstone (F3) that blocks the correction then blocks the
      record too. (W1 keeps a correction in the record's slot, hence same scope, key and,
      for a `many` key, value hash; value-level tombstones exist only for `many` keys, F1.)
    - A skipped `superseded` row no longer hides what *it* supersedes, so chains are marked
      from the oldest record up: a record is marked only once its own target is `forgotten`,
      or stored `superseded`/`expired` since no later than the moment the record could
      start hiding it (max(s, its valid_from)). A target missing from `records`, or a
      supersedes cycle, blocks the `superseded` mark (the `expired` one is always safe).

    The list is ordered by chain depth (targets before the records that supersede them),
    then (valid_from, version, id).
    """
    by_id = _dedupe(records)

    # Earliest usable correction per target, built once.
    corrected_since: dict[str, datetime] = {}
    for correction in by_id.values():
        target_id = correction.supersedes
        if (
            target_id is None
            or correction.valid_until is not None
            or correction.status not in ("active", "superseded")
            or correction.valid_from > now
        ):
            continue
        target = by_id.get(target_id)
        if target is None or correction.evidence_time < target.evidence_time:
            continue
        current = corrected_since.get(target_id)
        if current is None or correction.valid_from < current:
            corrected_since[target_id] = correction.valid_from

    depth, cyclic = _chain_depths(by_id)
    order = sorted(by_id.values(), key=lambda r: (depth[r.id], r.valid_from, r.version, r.id))

    state: dict[str, tuple[str, datetime | None]] = {}
    changes: list[StatusChange] = []
    for record in order:
        status, since = record.status, record.status_since
        if status == "active":
            pick: tuple[str, datetime] | None = None
            until = record.valid_until
            if until is not None and until <= now:
                pick = ("expired", until)
            start = corrected_since.get(record.id)
            if (
                start is not None
                and record.id not in cyclic
                and (pick is None or start < pick[1])
                and _target_settled(record, start, state)
            ):
                pick = ("superseded", start)
            if pick is not None:
                changes.append(StatusChange(record.id, pick[0], pick[1]))
                status, since = pick
        state[record.id] = (status, since)
    return changes


def _target_settled(
    record: MemoryRecord, start: datetime, state: Mapping[str, tuple[str, datetime | None]]
) -> bool:
    """W12 chain order: may `record` be marked superseded since `start`? Only if what it
    supersedes is already hidden by its own stored status whenever `record` could hide it."""
    target_id = record.supersedes
    if target_id is None:
        return True
    settled = state.get(target_id)
    if settled is None:
        return False
    status, since = settled
    if status == "forgotten":
        return True
    if status in ("superseded", "expired"):
        bound = start if start >= record.valid_from else record.valid_from
        return since is None or since <= bound
    return False


def apply_changes(
    records: Iterable[MemoryRecord], changes: Iterable[StatusChange]
) -> list[MemoryRecord]:
    """Apply a W12 plan to in-memory records (what the maintenance command writes), keeping
    the input order."""
    by_id = {change.id: change for change in changes}
    out = []
    for record in records:
        change = by_id.get(record.id)
        if change is None:
            out.append(record)
        else:
            out.append(replace(record, status=change.status, status_since=change.status_since))
    return out
