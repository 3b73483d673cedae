"""What the resolver's decision pass recorded (SPEC §3), read only where it is asked for —
standard library only (DESIGN habit 1).

A resolve decides every record but is read for counts far more often than for records (I9: a
turn needs counts, not an object per record). So the pass keeps one reason per id and what
excluded each record, and two readers make the rest when asked:

- `Decisions`: R8, a read-only mapping of id → `Explanation`, each formatted when it is
  looked up;
- `Explanations`: the same for several passes over disjoint ids, as one;
- `Exclusions`: R7's `excluded` — every excluded record by id as an `Exclusion`, sorted and
  built at the first read that needs them — with `counts()` and `first(limit)`, which read the
  reasons alone.

Neither changes what is answered: a read gives what a list made at resolve time held."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from itertools import chain

from config.builders import build_slotted
from memory.domain import (
    REASON_EXPIRED,
    REASON_FORGOTTEN,
    REASON_LOWER_PRECEDENCE,
    REASON_NOT_YET_VALID,
    REASON_SCOPE,
    REASON_SUPERSEDED,
    Exclusion,
    Explanation,
    MemoryRecord,
)

__all__ = ["ACTIVE", "Decisions", "Exclusions", "Explanations", "rfc3339", "slot_of"]

# The reason recorded for a slot's winner.
ACTIVE = "active"

# A slot: (scope id, key, normalised value for a `many` key, else "").
Slot = tuple[str, str, str]


def rfc3339(moment: datetime | None) -> str:
    """§0 time format (RFC 3339 UTC with a Z) for details and the trace."""
    if moment is None:
        return "unknown"
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def slot_of(record: MemoryRecord, scope_id: str, many_keys: frozenset[str] | set[str]) -> Slot:
    """R6: the slot a record competes in."""
    key = record.key
    return (scope_id, key, record.value_slot(key in many_keys))


def _why_beats(winner: MemoryRecord, loser: MemoryRecord) -> str:
    """R8: which R6 criterion decided between two records (never their values)."""
    if winner.authority != loser.authority:
        return f"higher authority {winner.authority}"
    if winner.valid_from != loser.valid_from:
        return f"later valid_from {rfc3339(winner.valid_from)}"
    if winner.version != loser.version:
        return f"higher version {winner.version}"
    return "equal rank, smaller id"


class Decisions(Mapping):
    """What one decision pass recorded, read as R8: a read-only mapping of record id →
    `Explanation` for every record the pass saw, iterating in id order.

    The pass records, per id, its reason (or `ACTIVE`) and, in `refs`, what excluded it when
    that was not the record's own stored status: the blocking tombstone's id (R4), the
    superseding record's id (R5) or the `valid_until` boundary (R3); per slot, the winner
    and how many records reached R6 there. An explanation is formatted from these only
    when it is looked up: a resolve decides every record and explains at most a few."""

    __slots__ = ("reasons", "refs", "slots", "records", "many_keys", "_by_id")

    def __init__(self, records, reasons, refs, slots, many_keys):
        self.reasons: dict[str, str] = reasons
        self.refs: dict[str, str | datetime] = refs
        self.slots: dict[Slot, list] = slots  # slot → [winner, records that reached R6]
        self.records: Sequence[MemoryRecord] = records  # distinct, as the pass took them
        self.many_keys = many_keys
        self._by_id: dict[str, MemoryRecord] | None = None

    def record(self, record_id: str) -> MemoryRecord:
        """The record the pass decided under this id."""
        if self._by_id is None:
            self._by_id = {record.id: record for record in self.records}
        return self._by_id[record_id]

    def __getitem__(self, record_id: str) -> Explanation:
        reason = self.reasons[record_id]
        step, detail = self._format(self.record(record_id), reason, self.refs.get(record_id))
        return Explanation(record_id, step, reason, detail)

    def _format(self, record: MemoryRecord, reason: str, ref) -> tuple[str, str]:
        """R8: the step and the detail of a recorded decision; ids, scope ids and
        boundaries only, never a value."""
        stored = f"stored status {record.status} since {rfc3339(record.status_since)}"
        scope_id = record.scope.scope_id(record.user)
        if reason == REASON_SCOPE:
            return "R1", f"scope {scope_id} does not match the context"
        if reason == REASON_FORGOTTEN:
            return ("R2", stored) if ref is None else ("R4", f"blocked by tombstone {ref}")
        if reason == REASON_NOT_YET_VALID:
            return "R3", f"valid_from {rfc3339(record.valid_from)} > now"
        if reason == REASON_EXPIRED:
            return "R3", stored if ref is None else f"valid_until {rfc3339(ref)} <= now"
        if reason == REASON_SUPERSEDED:
            return "R5", stored if ref is None else f"superseded by {ref}"
        return self._format_slot(record, reason, slot_of(record, scope_id, self.many_keys))

    def _format_slot(self, record: MemoryRecord, reason: str, slot: Slot) -> tuple[str, str]:
        """R8 for a record that reached R6: whom it lost to, or what it won over."""
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


class Explanations(Mapping):
    """R8 of several passes over disjoint ids (a context resolved key by key, one pass per
    group of keys), read as one mapping of record id → `Explanation` iterating in id order,
    as one pass answers it. An id is looked up in each pass's in turn (a few dozen), never
    in a map of them all."""

    __slots__ = ("_parts",)

    def __init__(self, parts: list[Mapping[str, Explanation]]):
        self._parts = parts

    def __getitem__(self, record_id: str) -> Explanation:
        for part in self._parts:
            if record_id in part:
                return part[record_id]
        raise KeyError(record_id)

    def __contains__(self, record_id: object) -> bool:
        return any(record_id in part for part in self._parts)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(chain.from_iterable(self._parts)))

    def __len__(self) -> int:
        return sum(len(part) for part in self._parts)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class Exclusions(Sequence):
    """R7's `excluded`: every record a pass (or several, over disjoint ids) excluded, as
    `Exclusion`s ordered by id, read from the reason it recorded for each id (`ACTIVE` for
    a winner, left out). Sorting and building the `Exclusion`s waits for the first read that
    needs them (an index, an iteration, a comparison) and is kept from then on; `counts()`
    and `first(limit)` never need them.

    Equal, as the tuple it stood for was, to a tuple of the same `Exclusion`s in the same
    order (and to another `Exclusions` of them)."""

    __slots__ = ("_sources", "_listed")

    def __init__(self, reasons: Iterable[Mapping[str, str]]):
        """`reasons`: id → reason maps, one per pass, their ids disjoint."""
        self._sources = tuple(reasons)
        self._listed: tuple[Exclusion, ...] | None = None

    @classmethod
    def joined(cls, parts: Iterable[Sequence[Exclusion]]) -> Exclusions:
        """The exclusions of several resolutions over disjoint ids, as one."""
        sources: list[Mapping[str, str]] = []
        for part in parts:
            if isinstance(part, Exclusions):
                sources.extend(part._sources)
            else:
                sources.append({item.id: item.reason for item in part})
        return cls(sources)

    def _reasons(self) -> Iterable[str]:
        return chain.from_iterable(source.values() for source in self._sources)

    def counts(self) -> dict[str, int]:
        """How many records each reason excluded (reasons that excluded none left out)."""
        counts = Counter(self._reasons())
        counts.pop(ACTIVE, None)
        return dict(counts)

    def first(self, limit: int) -> dict[str, list[str]]:
        """For each reason, the ids of the first `limit` records it excluded, by id (I9's
        bounded listing): a bounded heap per reason, never a sort of them all."""
        by_reason: dict[str, list[str]] = {}
        for source in self._sources:
            for record_id, reason in source.items():
                found = by_reason.get(reason)
                if found is None:
                    by_reason[reason] = [record_id]
                else:
                    found.append(record_id)
        by_reason.pop(ACTIVE, None)
        return {reason: heapq.nsmallest(limit, ids) for reason, ids in by_reason.items()}

    def listed(self) -> tuple[Exclusion, ...]:
        """Every exclusion, by id (made at the first call, then kept)."""
        if self._listed is None:
            reasons: Mapping[str, str]
            if len(self._sources) == 1:
                reasons = self._sources[0]
            else:
                reasons = {}
                for source in self._sources:
                    reasons.update(source)
            ids = [record_id for record_id, reason in reasons.items() if reason != ACTIVE]
            ids.sort()
            reason_of = list(map(reasons.__getitem__, ids))
            made = build_slotted(Exclusion, {"id": ids, "reason": reason_of}, len(ids))
            self._listed = tuple(made)
        return self._listed

    def __len__(self) -> int:
        if self._listed is not None:
            return len(self._listed)
        return sum(self.counts().values())

    def __getitem__(self, index):
        return self.listed()[index]

    def __iter__(self) -> Iterator[Exclusion]:
        return iter(self.listed())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Exclusions | tuple):
            return self.listed() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to tuples, yet not one

    def __repr__(self) -> str:
        return repr(self.listed())
