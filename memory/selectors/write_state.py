"""What the write path reads (`memory.services`, `memory.services.teaching`): the stored state a
batch of asserts and retractions is decided against (W3–W10, `memory.write_rules.Known`), read
under the caller's lock in one statement."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime

from config.storage import raw_reader

from .. import write_storage
from ..domain import MemoryRecord as DomainRecord
from ..domain import Tombstone as DomainTombstone
from ..models import MemoryRecord, SlotRetraction
from .records import records_to_domain, registry, tombstones_of

# ---------------------------------------------------------------------------------------------
# What a batch of writes reads (memory.write_rules): one statement


@dataclasses.dataclass(frozen=True)
class WriteState:
    """Everything W3–W9 read for a batch of asserts (see `memory.write_rules.Known`): every stored
    record of the scoped keys asked for (forgotten skeletons included, sources included), the
    tombstones and retraction times of their keys, and which of the keys are `many`."""

    records: dict[tuple[str, str], list[DomainRecord]]
    tombstones: list[DomainTombstone]
    retractions: dict[tuple[str, str, str], datetime]
    many_keys: frozenset[str]


def write_state(user, slots: Iterable[tuple[str, str]]) -> WriteState:
    """The state for the scoped keys `slots` ((scope_id, key) pairs) of `user`, read under the
    caller's lock in one statement on SQLite and PostgreSQL (records joined with their source
    links, tombstones, retractions and the keys' registry rows, as one UNION ALL), whatever
    the number of keys or stored records; the ORM reads it in five elsewhere."""
    slots = sorted(set(slots))
    keys = sorted({key for _, key in slots})
    scope_ids = sorted({scope_id for scope_id, _ in slots})
    records: dict[tuple[str, str], list[DomainRecord]] = {slot: [] for slot in slots}
    if not slots:
        return WriteState(records, [], {}, frozenset())
    reader = raw_reader(MemoryRecord.objects.db)
    if reader is None:
        return _write_state_orm(user, slots, keys, scope_ids, records)
    tombstones, retractions, many = write_storage.read_write_state(
        reader, user, records, keys, scope_ids
    )
    return WriteState(records, tombstones, retractions, many)


def _write_state_orm(user, slots, keys, scope_ids, records) -> WriteState:
    from django.db.models import Max

    qs = MemoryRecord.objects.filter(user=user, key__in=keys, scope_id__in=scope_ids)
    for record in records_to_domain(qs, user.username):
        found = records.get((record.scope_id, record.key))
        if found is not None:
            found.append(record)
    retractions = {
        (scope_id, key, hashed or ""): at
        for scope_id, key, hashed, at in SlotRetraction.objects.filter(user=user, key__in=keys)
        .values("scope_id", "key", "value_hash")
        .annotate(at=Max("retracted_at"))
        .values_list("scope_id", "key", "value_hash", "at")
    }
    return WriteState(records, tombstones_of(user, keys), retractions, registry(keys).many_keys)
