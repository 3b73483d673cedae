"""A memory's history page (SPEC W11, E1, F7.2, M3): every value of the memory's slot over
time, with its window and who set it. A confirmation is part of the value it confirmed ("you
confirmed it on …"), a time with no value shows as a gap, and a forgotten value appears as
"forgotten on …", never with its value."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from config.pages import day, when

from . import forget_pages
from .domain import MemoryRecord as DomainRecord
from .history import fold
from .presentation import (
    SET_BY,
    Provenance,
    ScopeNames,
    from_message,
    plain_label,
    source_messages,
    standing,
    told_by,
)
from .selectors.history import slot_history


@dataclass(frozen=True)
class HistoryRow:
    record: DomainRecord | None  # None: a gap between values
    value: str | None  # None: forgotten, the value is gone
    forgotten_on: str
    starts: str
    ends: str
    set_by: str
    status: str
    current: bool
    provenance: Provenance | None
    confirmed_on: str = ""
    gap: str = ""


def _gap(ended: datetime, what: DomainRecord, resumed: datetime) -> HistoryRow:
    """A time in which nothing of the slot held, and why it began."""
    why = ""
    if what.status == "forgotten":
        why = " (it was forgotten)"
    elif what.retracted_at is not None:
        why = " (it was marked no longer true)"
    return HistoryRow(
        None,
        None,
        "",
        when(ended),
        when(resumed),
        "",
        "",
        False,
        None,
        gap=f"Nothing remembered from {when(ended)} until {when(resumed)}{why}.",
    )


def history_page(user, row) -> dict:
    """What the history page of the memory `row` shows."""
    history = slot_history(user, key=row.key, scope_id=row.scope_id)
    rows = _rows(user, history)
    live = [r for r in rows if r.current]
    names = ScopeNames(user, [row.scope_id])
    labels = history.remembered.registry.labels
    label = labels.get(row.key) or plain_label(row.key)
    # F7.2: a current value a forget withholds says so, naming the forget.
    withheld = forget_pages.withheld_notices(user, [r.record.id for r in live], labels, names)
    return {
        "label": label,
        "key": row.key,
        "many": history.many,
        "rows": rows,
        "scope_words": names.words(row.scope_id),
        "current": live,
        "withheld": [
            {"id": r.record.id, "value": r.value, "text": withheld[r.record.id].text}
            for r in live
            if r.record.id in withheld
        ],
    }


def _rows(user, history) -> list[HistoryRow]:
    """The slot's values in history order, a gap row before a value that follows a time in
    which nothing held."""
    found = source_messages(user, [s for r in history.records for s in r.sources])
    rows: list[HistoryRow] = []
    for entry in fold(history.records, history.ends, many=history.many):
        record, last, end, forgotten = entry.record, entry.last, entry.end, entry.forgotten
        if entry.gap_before is not None:
            rows.append(_gap(*entry.gap_before, record.valid_from))
        # E1: the state of the value's last record, in the pages' words (a timeline: each
        # row says what became of its own value then, not whether it came back later).
        now = standing(last, history.states, [last])
        rows.append(
            HistoryRow(
                record=last,
                value=None if forgotten else record.value,
                forgotten_on=day(record.status_since) if forgotten else "",
                starts=when(record.valid_from),
                ends=when(end) if end is not None else "still open",
                # M3: a value an assistant stored was told by it, not inferred.
                set_by=told_by(record, with_day=False) or SET_BY[record.authority],
                status=now.words,
                current=now.current,
                provenance=None if forgotten else from_message(record, found),
                confirmed_on=day(entry.confirmations[-1].recorded_at)
                if entry.confirmations
                else "",
            )
        )
    return rows
