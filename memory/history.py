"""A slot's history as a person reads it (SPEC W11, §2, F2) — pure, standard library only.

Each record of a scoped key has a derived end (`effective_ends`) and a place in the history
order (`history_order`); the API lists those records as they are. A person reads values
instead of records, so `fold` folds them:

- **A confirmation is part of the value it confirmed** (§2): a record superseded by one of the
  same value that the user set (a confirm; before same-value corrections became confirms, a
  correction) is not a replaced value. The value's entry runs from its first record to the end
  of its last confirmation.
- **A forgotten value ends when it was forgotten** (F2): its skeleton keeps the window it had,
  but nothing of it held after the forget.
- **A time with no value is a gap**: when a value starts after everything before it in the
  same slot (a value slot for a `many` key) had ended, the entry says from when, and which
  record's end began the gap. A forgotten value of a `many` key joins no slot: its value, and
  so its slot, is unknown."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from memory.domain import (
    AUTHORITY_RANK,
    USER_AUTHORITIES,
    MemoryRecord,
    normalise_value,
)
from memory.resolver import unique_records

_MAX_RANK = max(AUTHORITY_RANK.values())

# ---------------------------------------------------------------------------------------------
# The records of a slot in time (W11)


def _history_key(record: MemoryRecord) -> tuple:
    return (record.valid_from, record.version, record.id)


def history_order(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """W11: records in `valid_from` order, then version (then id, only so that equal pairs
    in bad data still sort the same way every time). Duplicates count once."""
    return sorted(unique_records(records).values(), key=_history_key)


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
    by_id = unique_records(records)
    first_correction = _first_corrections(by_id.values())
    ends: dict[str, datetime | None] = {}
    for group in _slots(by_id.values(), many).values():
        _end_slot(group, first_correction, ends)
    return ends


def _first_corrections(records: Iterable[MemoryRecord]) -> dict[str, datetime]:
    """W11: for each superseded record, the earliest `valid_from` of an open-ended record
    superseding it. A forget (F2) is not a correction and a record with a window of its own
    cuts nothing, so neither counts."""
    first_correction: dict[str, datetime] = {}
    for record in records:
        target = record.supersedes
        if target is None or record.valid_until is not None or record.status == "forgotten":
            continue
        current = first_correction.get(target)
        if current is None or record.valid_from < current:
            first_correction[target] = record.valid_from
    return first_correction


def _slots(
    records: Iterable[MemoryRecord], many: bool
) -> dict[tuple[str, str, str], list[MemoryRecord]]:
    """W11: the records of each slot (scope, key, and value slot for a `many` key)."""
    slots: dict[tuple[str, str, str], list[MemoryRecord]] = {}
    for record in records:
        slot = (record.scope.scope_id(record.user), record.key, record.value_slot(many))
        slots.setdefault(slot, []).append(record)
    return slots


def _earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    """The earlier of two ends, None being open (later than any time)."""
    if a is None:
        return b
    if b is None or a < b:
        return a
    return b


def _later_cut(
    earliest: list[tuple[tuple[datetime, str], ...]], rank: int, target: str | None
) -> datetime | None:
    """W11: the earliest `valid_from` of a later open-ended record of the slot with at least
    authority `rank`, skipping the record a correction supersedes (`target`): R5 hides that
    one while the correction is valid, so it never cuts the correction."""
    cut: datetime | None = None
    for entries in earliest[rank:]:
        for later, later_id in entries:
            if later_id != target:
                cut = _earlier(cut, later)
                break
    return cut


def _end_slot(
    group: list[MemoryRecord],
    first_correction: Mapping[str, datetime],
    ends: dict[str, datetime | None],
) -> None:
    """W11: the derived end of each record of one slot, in one backward pass over the slot
    in history order; written into `ends`."""
    group.sort(key=_history_key)
    # earliest[rank]: the two earliest (valid_from, id) of later open-ended records of
    # exactly that authority rank (those behind the cursor of the backward pass). Two,
    # because the record a correction supersedes is skipped as its cutter.
    earliest: list[tuple[tuple[datetime, str], ...]] = [()] * (_MAX_RANK + 1)
    for record in reversed(group):
        own = record.valid_until
        if record.status == "forgotten":
            # F2: a skeleton keeps the window it had, and cuts nothing.
            ends[record.id] = (
                record.valid_from if own is not None and own < record.valid_from else own
            )
            continue
        rank = AUTHORITY_RANK[record.authority]
        end = _earlier(own, first_correction.get(record.id))
        end = _earlier(end, _later_cut(earliest, rank, record.supersedes))
        if end is not None and end < record.valid_from:
            end = record.valid_from
        ends[record.id] = end
        if own is None:
            # Going backwards, this is the earliest open-ended record seen so far.
            earliest[rank] = ((record.valid_from, record.id), *earliest[rank][:1])


# ---------------------------------------------------------------------------------------------
# The values a person reads


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One value of the slot: its first record (the value, its start, who set it, its
    sources), the record that holds it last (after its confirmations), their end, and the gap
    before it, if nothing held just before."""

    record: MemoryRecord
    last: MemoryRecord
    confirmations: tuple[MemoryRecord, ...]
    end: datetime | None  # None: still open
    gap_before: tuple[datetime, MemoryRecord] | None = None  # (when nothing held, what ended)

    @property
    def forgotten(self) -> bool:
        return self.record.status == "forgotten"


def confirmations(records: Iterable[MemoryRecord]) -> dict[str, MemoryRecord]:
    """§2: by superseded id, the record of the same value the user set over it (a confirm)."""
    records = list(records)
    by_id = {r.id: r for r in records}
    found = {}
    for record in records:
        older = by_id.get(record.supersedes or "")
        if (
            older is not None
            and record.authority in USER_AUTHORITIES
            and "forgotten" not in (record.status, older.status)
            and normalise_value(record.value) == normalise_value(older.value)
        ):
            found[older.id] = record
    return found


def _end(record: MemoryRecord, ends: Mapping[str, datetime | None]) -> datetime | None:
    end = ends.get(record.id)
    since = record.status_since
    if record.status == "forgotten" and since is not None and (end is None or end > since):
        return since
    return end


_OPEN = "open"


def fold(
    records: Iterable[MemoryRecord], ends: Mapping[str, datetime | None], *, many: bool
) -> list[HistoryEntry]:
    """The slot's values in history order (`records` as `history_order` gives them, `ends`
    from `effective_ends`)."""
    records = list(records)
    confirmed_by = confirmations(records)
    merged = {r.id for r in confirmed_by.values()}
    # How far each slot was covered so far: the latest end and the record that ended there,
    # or _OPEN once a value has no end.
    reach: dict[str, tuple[datetime, MemoryRecord] | str] = {}
    out = []
    for record in records:
        if record.id in merged:
            continue
        last, chain = record, []
        while last.id in confirmed_by:
            last = confirmed_by[last.id]
            chain.append(last)
        end = _end(last, ends)
        gap = None
        if not (many and record.status == "forgotten"):
            slot = normalise_value(record.value) if many else ""
            prior = reach.get(slot)
            if isinstance(prior, tuple) and prior[0] < record.valid_from:
                gap = prior
            if end is None:
                reach[slot] = _OPEN
            elif prior != _OPEN and (prior is None or end >= prior[0]):
                reach[slot] = (end, last)
        out.append(HistoryEntry(record, last, tuple(chain), end, gap))
    return out
