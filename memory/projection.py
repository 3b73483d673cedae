"""Prompt projection (SPEC §5): what the model is given out of the resolver's `active` records.

Pure and standard library only (DESIGN habit 1). F7.2's withholding, then P1–P3, run in order
on the records the resolver kept; a record excluded at one step is not seen by later ones, so
an unsupported or low-confidence record in a narrow scope does not shadow a usable one in a
wider scope. A withheld record still won its slot in the resolver (R1–R8 unchanged), so a
lower record of its slot never shows through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from operator import attrgetter

from config.builders import build_slotted
from conversations.scopes import SCOPE_NARROWNESS
from memory.domain import (
    REASON_LOW_CONFIDENCE,
    REASON_SHADOWED,
    REASON_UNSUPPORTED,
    REASON_WITHHELD,
    USER_AUTHORITIES,
    MemoryRecord,
    ProjectedMemory,
    Projection,
    default_label,
    normalise_value,
    r6_beats,
    scope_covers,
)
from memory.reasons import Exclusions

__all__ = ["CERTAINTIES", "certainty_of", "project", "withholding_in"]

# P2, in the order the planner fills the memory section (I3).
CERTAINTIES = ("confirmed", "likely", "uncertain")
_CERTAINTY_RANK = {name: rank for rank, name in enumerate(CERTAINTIES)}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def certainty_of(record: MemoryRecord, *, likely: float = 0.85, uncertain: float = 0.5) -> str:
    """P2: `confirmed` for the user's own word, else by confidence against the thresholds
    (bounds included: `confidence >= likely` is likely, `>= uncertain` uncertain); below
    `uncertain` the answer is the exclusion reason `low-confidence`. A record a connection told
    with no source message is at most `uncertain` (SPEC §15 M3)."""
    if record.authority in USER_AUTHORITIES:
        return "confirmed"
    if record.confidence >= likely and (record.sources or not record.told_by):
        return "likely"
    if record.confidence >= uncertain:
        return "uncertain"
    return REASON_LOW_CONFIDENCE


def _outranks(a: MemoryRecord, b: MemoryRecord) -> bool:
    """P3: narrower scope wins; equal scope kinds (impossible for one context, kept
    deterministic anyway) fall back to the R6 order."""
    narrow_a, narrow_b = SCOPE_NARROWNESS[a.scope.kind], SCOPE_NARROWNESS[b.scope.kind]
    if narrow_a != narrow_b:
        return narrow_a > narrow_b
    return r6_beats(a, b)


def prompt_order(item: ProjectedMemory) -> tuple:
    """I3: confirmed → likely → uncertain, narrower scope first, newer valid_from first,
    then id. Valid time as integer microseconds so the order is exact."""
    record = item.record
    micros = (record.valid_from - _EPOCH) // _MICROSECOND
    return (
        _CERTAINTY_RANK[item.certainty],
        -SCOPE_NARROWNESS[record.scope.kind],
        -micros,
        record.id,
    )


def withholding_in(tombstones: Iterable, context) -> frozenset[str]:
    """F7.2: the ids of the tombstones whose scope covers `context` (F6's mapping,
    `memory.domain.scope_covers`): a record one of them withholds is withheld there."""
    character, conversation = context.character, context.conversation
    return frozenset(
        t.id
        for t in tombstones
        if scope_covers(t.scope_id, character=character, conversation=conversation)
    )


def withheld_here(record: MemoryRecord, withholding: frozenset[str]) -> bool:
    """F7.2: whether a tombstone among `withholding` (`withholding_in` the context) withholds
    `record`."""
    return bool(record.withheld_by) and not withholding.isdisjoint(record.withheld_by)


def project(
    active: Iterable[MemoryRecord],
    *,
    labels: Mapping[str, str],
    many_keys: frozenset[str] | set[str] = frozenset(),
    likely: float = 0.85,
    uncertain: float = 0.5,
    withholding: frozenset[str] = frozenset(),
) -> Projection:
    """F7.2 and P1–P4 on the resolver's `active` records (one context).

    - F7.2 withholding: a record that a tombstone of `withholding` (the ids of the
      tombstones whose scope covers the context, `withholding_in`) withholds → `withheld`.
    - P1 provenance: `user-confirmed`/`user-corrected` always pass; any other record needs at
      least one entry in `sources` (which lists only messages that still exist) or the
      connection that told it (`told_by`, SPEC §15 M3), else `unsupported`.
    - P2 certainty (`certainty_of`): below `uncertain` → `low-confidence`.
    - P3 shadowing: a `one` key keeps only its narrowest scope's record (scene >
      conversation > character > user); a `many` key keeps each normalised value once, from
      the narrowest scope; the others → `shadowed`.
    - P4 shape: `ProjectedMemory` with `labels.get(key)` or `default_label(key)`.

    `prompt` is in the order the planner fills it (I3); `excluded` is ordered by id, made
    when it is read (`memory.reasons.Exclusions`). Duplicated ids count once.
    """
    excluded: dict[str, str] = {}
    passed = _admitted(active, excluded, withholding, likely, uncertain)

    # P3: one record per key (`one`) or per (key, normalised value) (`many`); a `one` key's
    # slot is the key itself, a `many` key's a (key, value) pair, so the two never meet.
    best: dict[str | tuple[str, str], tuple[MemoryRecord, str]] = {}
    for item in passed.values():
        record = item[0]
        key = record.key
        slot = (key, normalise_value(record.value)) if key in many_keys else key
        current = best.get(slot)
        if current is None or _outranks(record, current[0]):
            best[slot] = item
    winners = {item[0].id for item in best.values()}

    # P4: labels looked up once per key.
    label_of: dict[str, str] = {}
    kept: list[tuple[MemoryRecord, str]] = []
    for record_id, item in passed.items():
        if record_id not in winners:
            excluded[record_id] = REASON_SHADOWED
            continue
        kept.append(item)
        key = item[0].key
        if key not in label_of:
            label_of[key] = labels.get(key) or default_label(key)
    records = [record for record, _ in kept]
    keys = list(map(_record_key, records))
    prompt = build_slotted(
        ProjectedMemory,
        {
            "key": keys,
            "label": list(map(label_of.__getitem__, keys)),
            "value": list(map(_record_value, records)),
            "certainty": [certainty for _, certainty in kept],
            "scope": list(map(_record_scope, records)),
            "record": records,
        },
        len(records),
    )

    prompt.sort(key=prompt_order)
    return Projection(prompt=tuple(prompt), excluded=Exclusions((excluded,)))


def _admitted(
    active: Iterable[MemoryRecord],
    excluded: dict[str, str],
    withholding: frozenset[str],
    likely: float,
    uncertain: float,
) -> dict[str, tuple[MemoryRecord, str]]:
    """F7.2's withholding, P1 and P2 in order: the records that pass, each with its
    certainty, by id; each other one's reason is put in `excluded`. Duplicated ids count
    once."""
    passed: dict[str, tuple[MemoryRecord, str]] = {}
    for record in active:
        record_id = record.id
        if record_id in passed or record_id in excluded:
            continue
        # F7.2
        if withholding and record.withheld_by and not withholding.isdisjoint(record.withheld_by):
            excluded[record_id] = REASON_WITHHELD
            continue
        # P1 (a connection that told it counts as its source, §15 M3)
        if record.authority not in USER_AUTHORITIES and not record.sources and not record.told_by:
            excluded[record_id] = REASON_UNSUPPORTED
            continue
        # P2
        certainty = certainty_of(record, likely=likely, uncertain=uncertain)
        if certainty == REASON_LOW_CONFIDENCE:
            excluded[record_id] = REASON_LOW_CONFIDENCE
            continue
        passed[record_id] = (record, certainty)
    return passed


_record_key = attrgetter("key")
_record_value = attrgetter("value")
_record_scope = attrgetter("scope")
