"""Forgetting (SPEC §4, F1–F4): the only writers of tombstones. A forget erases the values
of its slot (F2), keeps a skeleton, and blocks the slot from being learnt again until the user
lets it (F4)."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
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
    MemoryProfile,
    MemoryRecord,
    MemoryWithholding,
    Tombstone,
)
from .selectors.records import memory_get, parse_uuid, registry
from .selectors.resolution import remembered_now
from .services.asserting import lock_profile
from .storage import MEMORY_CACHE, TOMBSTONE_COLUMNS, tombstone_from_row
from .withholding import (
    Purged,
    memories_released_by,
    plan_withholding,
    records_mentioning,
    released_by,
    withheld_distinct,
    withhold,
)

log = logging.getLogger("companion.memory")


# ---------------------------------------------------------------------------------------------
# Forget (F1–F4)


def memory_forget(
    *, record_id, user=None, everywhere: bool = False, whole_key: bool = False, by: str = "user"
) -> Tombstone:
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
        user=owner,
        key=row.key,
        scope_id="*" if everywhere else row.scope_id,
        value=row.value if many and not whole_key else None,
        by=by,
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


def forget_key(
    *, user, key: str, scope_id: str, value: str | None = None, by: str = "user"
) -> Tombstone:
    """Create a tombstone and purge every record it covers in the same transaction (F1, F2),
    and withhold the messages that hold what it purged (F6). The tombstone keeps only a keyed
    hash of `value` (value-level forget), never the value, and withholds the user's other
    memories that hold what it purged (F7.2). The tombstone answered carries
    `withheld_messages` and `withheld_memories`: how many of each it withholds."""
    with transaction.atomic():
        profile = lock_profile(user)
        secret = profile.secret_bytes()
        now = db_now()
        tombstone = Tombstone.objects.create(
            user=user,
            scope_id=scope_id,
            key=key,
            value_hash=value_hash(secret, value) if value is not None else None,
            forgotten_at=now,
            blocks_sources_before=now,
            forgotten_by=by,
        )
        # F7.6: once it commits, this process keeps nothing of what it erased or withholds.
        transaction.on_commit(lambda: MEMORY_CACHE.forgotten(user.pk))
        purged = purge_covered(user, [_tombstone_domain(tombstone, user)], secret)
        plan = plan_withholding(user, scope_id=scope_id, at=now, purged=purged)
        withheld = withhold(tombstone, plan)
        tombstone.withheld_messages = withheld
        tombstone.withheld_memories = len(plan.memories)
        # V1: ids only — the purged records, the messages (F6) and the other memories (F7.2)
        # withheld now.
        changes.forgotten(
            user,
            tombstone,
            [p.id for p in purged],
            withheld_message_ids=plan.messages,
            withheld_memory_ids=plan.memories,
        )
        log.info(
            "memory_forget key=%s scope=%s value_level=%s purged=%d withheld=%d",
            loggable_key(key),
            "*" if scope_id == "*" else scope_id.split(":", 1)[0],
            value is not None,
            len(purged),
            withheld,
        )
        return tombstone


def _tombstone_domain(t: Tombstone, user) -> DomainTombstone:
    return tombstone_from_row([getattr(t, column) for column in TOMBSTONE_COLUMNS], user.username)


def covered_records(
    user, tombstones: list[DomainTombstone], secret: bytes
) -> list[tuple[Purged, datetime]]:
    """The live records the tombstones cover (F3), each with its value as stored now and the
    time of the forget that covers it. Reads only."""
    keys = {t.key for t in tombstones}
    qs = MemoryRecord.objects.filter(user=user, key__in=keys).exclude(status="forgotten")
    covered: list[tuple[Purged, datetime]] = []
    for rid, key, scope_id, value, evidence in qs.values_list(
        "id", "key", "scope_id", "value", "evidence_time"
    ):
        hashed = None
        for t in tombstones:
            if t.value_hash is not None and hashed is None:
                hashed = value_hash(secret, value)
            if t.blocks(
                user=user.username,
                key=key,
                scope_id=scope_id,
                evidence_time=evidence,
                hashed_value=hashed,
            ):
                covered.append((Purged(str(rid), value), t.forgotten_at))
                break
    return covered


def purge_covered(user, tombstones: list[DomainTombstone], secret: bytes) -> list[Purged]:
    """F2: every record a tombstone covers becomes a skeleton: status `forgotten` since the
    forget, value erased. Its provenance links stay (they hold no value): F6 withholds those
    messages, and the transcript lists the memory under them as forgotten. Answers the purged
    records with their values as they were, for the forget's transaction alone."""
    covered = covered_records(user, tombstones, secret)
    for purged, at in covered:
        MemoryRecord.objects.filter(pk=purged.id).update(
            status="forgotten", status_since=at, value=""
        )
    # A purged record is no longer withheld by an earlier forget (F7.2): it holds no value.
    # (One home for the rule: a forget and an import both purge through here.)
    if covered:
        MemoryWithholding.objects.filter(memory_id__in=[p.id for p, _ in covered]).delete()
    return [purged for purged, _ in covered]


@dataclass(frozen=True)
class ForgetPreview:
    """What a forget would do, said before it is done (F6): how many messages the companion
    would stop seeing — forgetting in the record's own scope, and everywhere — the user's
    other remembered records whose values mention a value it would erase, and (F7.2) the
    remembered records a forget in the record's own scope would withhold."""

    withheld: int
    withheld_everywhere: int
    mentioned_in: list
    withheld_memories: list = dataclasses.field(default_factory=list)
    withheld_memories_everywhere: int = 0  # F7.3: how many a forget everywhere would withhold


def _prospective(user, row, scope_id: str, *, secret: bytes, at, whole_key: bool = False):
    """What forgetting `row` (a stored or a domain record: its key and value) in `scope_id` at
    `at` would purge and withhold, as `memory_forget` does. Reads only."""
    many = registry([row.key]).is_many(row.key)
    prospective = DomainTombstone(
        id="",
        user=user.username,
        scope_id=scope_id,
        key=row.key,
        value_hash=value_hash(secret, row.value) if many and not whole_key else None,
        forgotten_at=at,
        blocks_sources_before=at,
    )
    purged = [p for p, _ in covered_records(user, [prospective], secret)]
    return purged, plan_withholding(user, scope_id=scope_id, at=at, purged=purged)


def forget_preview(*, record_id, user, whole_key: bool = False) -> ForgetPreview:
    """F6: the forget confirmation page's counts, for both reaches of the forget. Reads only."""
    row = memory_get(record_id, user=user)
    secret = lock_free_secret(user)
    now = db_now()
    counts = []
    purged_here: list[Purged] = []
    memories_here: frozenset[str] = frozenset()
    covered_ids: set[str] = set()
    memory_counts = []
    for scope_id in (row.scope_id, "*"):
        purged, plan = _prospective(user, row, scope_id, secret=secret, at=now, whole_key=whole_key)
        counts.append(len(plan.messages))
        memory_counts.append(len(plan.memories))
        covered_ids |= {p.id for p in purged}
        if scope_id == row.scope_id:
            purged_here, memories_here = purged, plan.memories
    values = [p.value for p in purged_here] or [row.value]
    active = remembered_now(user).active
    withheld_memories = sorted(
        (r for r in active if r.id in memories_here), key=lambda r: (r.key, r.id)
    )
    return ForgetPreview(
        counts[0],
        counts[1],
        records_mentioning(active, values, excluding=covered_ids),
        withheld_memories,
        memory_counts[1],
    )


@dataclass(frozen=True)
class SelectedPreview:
    """What forgetting several memories at once would do (F7.3), said before it is done: how
    many distinct messages the companion would stop seeing, and the user's other remembered
    records (not among those forgotten) it would stop using (F7.2), by key then id."""

    withheld: int
    withheld_memories: list


def forget_selected_preview(*, records, active, user) -> SelectedPreview:
    """F7.3: the bulk confirmation page's count and list, for `records` (domain records among
    `active`, the user's remembered ones) each forgotten in its own scope, as
    `memory_forget_selected` does. Reads only."""
    secret = lock_free_secret(user)
    now = db_now()
    messages: set[str] = set()
    memories: set[str] = set()
    covered: set[str] = set()
    for record in records:
        purged, plan = _prospective(user, record, record.scope_id, secret=secret, at=now)
        messages |= plan.messages
        memories |= plan.memories
        covered |= {p.id for p in purged}
    withheld = sorted(
        (r for r in active if r.id in memories - covered), key=lambda r: (r.key, r.id)
    )
    return SelectedPreview(len(messages), withheld)


def withheld_total(tombstones) -> int:
    """How many distinct messages a batch of forgets withholds (each counted once)."""
    return withheld_distinct([t.pk for t in tombstones])


def lock_free_secret(user) -> bytes:
    """The user's hash secret, read without the write lock (a preview writes nothing)."""
    profile = MemoryProfile.objects.filter(user=user).first()
    return profile.secret_bytes() if profile is not None else b""


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
        transaction.on_commit(lambda: MEMORY_CACHE.forgotten(tombstone.user_id))  # F7.6
        # V1: the messages (F6) and the memories (F7.2) this undo gives back to the companion
        # (F4: those no other forget still withholds).
        changes.tombstone_deleted(
            tombstone.user,
            tombstone.pk,
            db_now(),
            released_message_ids=released_by(tombstone),
            released_memory_ids=memories_released_by(tombstone),
        )
        tombstone.delete()
    log.info("tombstone_delete key=%s", loggable_key(tombstone.key))
    return tombstone


def memory_forget_all(*, user) -> list[Tombstone]:
    """ "Forget everything": every key the user has a live memory of is forgotten everywhere
    (F1 with scope `*`), in one transaction."""
    with transaction.atomic():
        lock_profile(user)
        keys = sorted(
            set(
                MemoryRecord.objects.filter(user=user)
                .exclude(status="forgotten")
                .values_list("key", flat=True)
            )
        )
        return [forget_key(user=user, key=key, scope_id="*") for key in keys]
