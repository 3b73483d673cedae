"""Forgetting (SPEC §4, F1–F4): the only writers of tombstones. A forget erases the values
of its slot (F2), keeps a skeleton, and blocks the slot from being learnt again until the user
lets it (F4)."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction

from config.clock import db_now
from config.errors import (
    Conflict,
    NotFound,
    ValidationError,
)

from . import changes
from .domain import (
    Tombstone as DomainTombstone,
)
from .domain import (
    loggable_key,
    value_hash,
)
from .models import (
    FORGOTTEN_BY,
    MemoryRecord,
    MemorySource,
    Tombstone,
)
from .selectors import (
    memory_get,
    parse_uuid,
    registry,
)
from .services import lock_profile

log = logging.getLogger("companion.memory")


# ---------------------------------------------------------------------------------------------
# Forget (F1–F4)


def memory_forget(*, record_id, user=None, everywhere: bool = False, whole_key: bool = False,
                  by: str = "user") -> Tombstone:
    """F1/F2: forget the slot of a record. For a `many` key only its value slot, unless
    `whole_key`; `everywhere` forgets the key in every scope, present and future. `by` says
    who asked: the user, or support on the user's behalf (the forgotten page says so)."""
    if by not in FORGOTTEN_BY:
        raise ValidationError(f"Must be one of {', '.join(FORGOTTEN_BY)}.", field="by")
    row = memory_get(record_id, user=user)
    owner = row.user
    if row.status == "forgotten":
        raise Conflict("This memory is already forgotten.")
    many = registry([row.key]).is_many(row.key)
    return forget_key(
        user=owner, key=row.key, scope_id="*" if everywhere else row.scope_id,
        value=row.value if many and not whole_key else None, by=by,
    )


def memory_forget_selected(*, record_ids, user) -> list[Tombstone]:
    """Forget several memories of one user at once, each as `memory_forget` would (its own
    scope; for a `many` key its value slot), in one transaction. A record that an earlier
    forget of the batch already covered is skipped. Another user's (or an unknown) id is a
    `NotFound` and nothing is forgotten."""
    with transaction.atomic():
        lock_profile(user)
        rows = [memory_get(record_id, user=user) for record_id in record_ids]
        tombstones = []
        for row in rows:
            if MemoryRecord.objects.filter(pk=row.pk, status="forgotten").exists():
                continue
            tombstones.append(memory_forget(record_id=row.pk, user=user))
        return tombstones


def forget_key(*, user, key: str, scope_id: str, value: str | None = None, by: str = "user") -> Tombstone:
    """Create a tombstone and purge every record it covers in the same transaction (F1, F2).
    The tombstone keeps only a keyed hash of `value` (value-level forget), never the value."""
    with transaction.atomic():
        profile = lock_profile(user)
        secret = profile.secret_bytes()
        now = db_now()
        tombstone = Tombstone.objects.create(
            user=user, scope_id=scope_id, key=key,
            value_hash=value_hash(secret, value) if value is not None else None,
            forgotten_at=now, blocks_sources_before=now, forgotten_by=by,
        )
        purged = purge_covered(user, [_tombstone_domain(tombstone, user)], secret)
        changes.forgotten(user, tombstone, purged, withheld_message_ids=[])  # V1 (F6's ids: hook)
        log.info("memory_forget key=%s scope=%s value_level=%s purged=%d",
                 loggable_key(key), "*" if scope_id == "*" else scope_id.split(":", 1)[0], value is not None, len(purged))
        return tombstone


def _tombstone_domain(t: Tombstone, user) -> DomainTombstone:
    return DomainTombstone(
        id=str(t.id), user=user.username, scope_id=t.scope_id, key=t.key, value_hash=t.value_hash,
        forgotten_at=t.forgotten_at, blocks_sources_before=t.blocks_sources_before,
    )


def purge_covered(user, tombstones: list[DomainTombstone], secret: bytes) -> list[str]:
    """F2: every record a tombstone covers becomes a skeleton: status `forgotten` since the
    forget, value erased, provenance links dropped. Returns the purged records' ids."""
    keys = {t.key for t in tombstones}
    qs = MemoryRecord.objects.filter(user=user, key__in=keys).exclude(status="forgotten")
    doomed: dict[str, datetime] = {}
    for rid, key, scope_id, value, evidence in qs.values_list("id", "key", "scope_id", "value", "evidence_time"):
        hashed = None
        for t in tombstones:
            if t.value_hash is not None and hashed is None:
                hashed = value_hash(secret, value)
            if t.blocks(user=user.username, key=key, scope_id=scope_id, evidence_time=evidence, hashed_value=hashed):
                doomed[str(rid)] = t.forgotten_at
                break
    for rid, at in doomed.items():
        MemoryRecord.objects.filter(pk=rid).update(status="forgotten", status_since=at, value="")
    if doomed:
        MemorySource.objects.filter(memory_id__in=list(doomed)).delete()
    return sorted(doomed)


def tombstone_delete(*, tombstone_id, user=None) -> Tombstone:
    """F4: "let it learn this again". Erased values do not come back. Returns the deleted
    tombstone (its key names what may be learned again)."""
    qs = Tombstone.objects.filter(pk=parse_uuid(tombstone_id, field="tombstone"))
    if user is not None:
        qs = qs.filter(user=user)
    tombstone = qs.first()
    if tombstone is None:
        raise NotFound("No such tombstone.")
    with transaction.atomic():
        lock_profile(tombstone.user)
        changes.tombstone_deleted(tombstone.user, tombstone.pk, db_now(), released_message_ids=[])  # V1
        tombstone.delete()
    log.info("tombstone_delete key=%s", loggable_key(tombstone.key))
    return tombstone


def memory_forget_all(*, user) -> list[Tombstone]:
    """"Forget everything": every key the user has a live memory of is forgotten everywhere
    (F1 with scope `*`), in one transaction."""
    with transaction.atomic():
        lock_profile(user)
        keys = sorted(set(
            MemoryRecord.objects.filter(user=user).exclude(status="forgotten").values_list("key", flat=True)
        ))
        return [forget_key(user=user, key=key, scope_id="*") for key in keys]
