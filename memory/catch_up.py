"""Catching a held state up (docs/DESIGN.md, "Catch up, never start over"; SPEC R1–R8): a
context's state kept at a memory version, patched with the rows the triggers stamped after it
(`memory.triggers`), equal to a fresh read of the same rows. Pure: the standard library
only."""

from __future__ import annotations

import operator
from collections.abc import Mapping

from .current import ContextState
from .domain import MemoryRecord

_version = operator.attrgetter("version")


def caught_up(state: ContextState, changed: ContextState) -> ContextState:
    """`state` with the rows changed after the version it was kept at (`changed`: the
    records and tombstones inserted or updated since, the retractions added since): a row
    of an id already held replaces it where it stood, a new one comes last, a slot's
    retraction time is the latest of both. Unchanged rows stay the very objects they were,
    so a resolution of them is reused (`resolve_context`), and the slots and groups of keys
    they fill stay the very sequences they were (`by_slot`, `by_group`, when they were
    made). A changed record equal to the one of its id held is no change: a process keeps
    what its own writes left (`memory.state`) and reads those rows back as they are. Rows
    removed since are not changes this can make: the state is then read again whole
    (`memory.triggers`)."""
    changed = _news(state, changed)
    records, replaced = _replaced(state.records, changed.records)
    tombstones, _ = _replaced(state.tombstones, changed.tombstones)
    retractions = state.retractions
    if changed.retractions:
        retractions = dict(retractions)
        for slot, at in changed.retractions.items():
            held = retractions.get(slot)
            if held is None or at > held:
                retractions[slot] = at
    made = ContextState(records, tombstones, retractions)
    slots = state.__dict__.get("by_slot")
    if slots is not None:
        if changed.records:
            slots = _slots_caught_up(slots, changed.records, replaced)
        if slots is not None:
            made.__dict__["by_slot"] = slots
    groups = state.__dict__.get("by_group")
    if groups is not None:
        if changed.records:
            groups = groups.patched(len(records), changed.records)
        if groups is not None:
            made.__dict__["by_group"] = groups
    return made


def _news(state: ContextState, changed: ContextState) -> ContextState:
    """`changed` without the records `state` holds as they are."""
    same = _held_as_they_are(state, changed.records)
    if not same:
        return changed
    return ContextState(
        [record for record in changed.records if record.id not in same],
        changed.tombstones,
        changed.retractions,
    )


def _held_as_they_are(state: ContextState, changed: list) -> frozenset[str]:
    """The ids of the `changed` records `state` holds equal: looked up in their slots where
    the state has them, else in one pass over its records."""
    if not changed:
        return frozenset()
    slots = state.__dict__.get("by_slot")
    if slots is not None:
        return frozenset(
            record.id
            for record in changed
            if record in slots.get((record.scope_id, record.key), ())
        )
    wanted = {record.id: record for record in changed}
    return frozenset(
        record.id for record in state.records if record.id in wanted and wanted[record.id] == record
    )


def _replaced(held: list, changed: list) -> tuple[list, frozenset]:
    """`held` with the rows of `changed` in place (new ones last), and the ids replaced."""
    if not changed:
        return held, frozenset()
    by_id = {row.id: row for row in changed}
    kept = [by_id.pop(row.id, row) for row in held]
    return kept + [row for row in changed if row.id in by_id], frozenset(
        row.id for row in changed if row.id not in by_id
    )


def _slots_caught_up(slots: Mapping, changed: list, replaced: frozenset) -> dict | None:
    """`slots` with the changed records in place: a slot no changed record falls in is the
    very sequence it was; a touched slot is its rows with the changed ones put in (a
    replaced row where it stood, a new one added) in version order. None when a replaced row
    is not in the slot it now names (it moved): the caller makes the slots afresh."""
    touched: dict[tuple[str, str], dict[str, MemoryRecord]] = {}
    for record in changed:
        touched.setdefault((record.scope_id, record.key), {})[record.id] = record
    out = dict(slots)
    for slot, rows in touched.items():
        found = [rows.pop(record.id, record) for record in out.get(slot, ())]
        if any(record_id in replaced for record_id in rows):
            return None
        found += rows.values()
        found.sort(key=_version)
        out[slot] = found
    return out
