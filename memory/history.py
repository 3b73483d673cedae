"""A slot's history as a person reads it (SPEC W11, §2, F2) — pure, standard library only.

The resolver gives each record of a scoped key its effective end (`resolver.effective_ends`)
and the history order (`resolver.history_order`); the API lists those records as they are.
A person reads values instead of records, so this folds them:

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

from memory.domain import USER_AUTHORITIES, MemoryRecord, normalise_value


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
            older is not None and record.authority in USER_AUTHORITIES
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


def fold(records: Iterable[MemoryRecord], ends: Mapping[str, datetime | None], *,
         many: bool) -> list[HistoryEntry]:
    """The slot's values in history order (`records` as `resolver.history_order` gives them,
    `ends` from `resolver.effective_ends`)."""
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
