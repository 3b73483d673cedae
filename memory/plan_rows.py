"""A decided write plan as the rows the database takes (SPEC §1 W3–W10, V1, F7.2): every
writer of memory records lays its plan out here — the write services (`memory.services`) and
a turn's writes (`memory.state.ContextMemory.apply_writes`)."""

from __future__ import annotations

from config.storage import RowWriter
from conversations.scopes import USER_SCOPE_COLUMNS

from .changes import plan_events
from .models import MemoryRecord, MemorySource, SlotRetraction
from .withholding import release_memories
from .write_rules import WritePlan


def add_plan_rows(writer: RowWriter, user, plan: WritePlan, scope_fields: dict) -> None:
    """The rows of a decided write plan, added to `writer` in the order the database takes
    them (records, then their source links, then updates of stored records)."""
    writer.insert(
        [
            MemoryRecord(
                id=r.id,
                user=user,
                key=r.key,
                value=r.value,
                scope_id=r.scope_id,
                **(USER_SCOPE_COLUMNS if r.scope.kind == "user" else scope_fields[r.scope_id]),
                authority=r.authority,
                confidence=r.confidence,
                valid_from=r.valid_from,
                valid_until=r.valid_until,
                recorded_at=r.recorded_at,
                evidence_time=r.evidence_time,
                supersedes_id=r.supersedes,
                version=r.version,
                retracted_at=r.retracted_at,
                told_by_connection=r.told_by[0] if r.told_by else "",
                told_by_name=r.told_by[1] if r.told_by else "",
            )
            for r in plan.inserts
        ]
    )
    links = [MemorySource(memory_id=r.id, message_id=m) for r in plan.inserts for m in r.sources]
    links += [MemorySource(memory_id=rid, message_id=m) for rid, m in plan.links]
    writer.insert(links, ignore_conflicts=True)
    for rid, confidence in plan.confidence.items():
        writer.update(MemoryRecord, rid, confidence=confidence)
    for rid, (valid_until, retracted_at) in plan.closes.items():
        writer.update(MemoryRecord, rid, valid_until=valid_until, retracted_at=retracted_at)
    writer.insert(
        [
            SlotRetraction(
                user=user, scope_id=scope_id, key=key, value_hash=hashed, retracted_at=at
            )
            for scope_id, key, hashed, at in plan.retractions
        ]
    )
    writer.insert(plan_events(user.username, plan))  # V1: in the write's own statement
    if plan.releases:  # F7.2: once the rows are written, in the same transaction
        writer.then(lambda: _release(user, plan.releases))


def _release(user, releases: list) -> None:
    for record_id, evidence_time in releases:
        release_memories(user=user, memory_ids=[record_id], evidence_time=evidence_time)
