"""Reads the memory pages need beyond what is remembered now (SPEC §4, F1, F2, F4): the
registry's sentences, forgotten records' skeletons, the "no longer true" list, the forgotten
slots. Every query filters by user first (SPEC §0)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable
from datetime import datetime

from config.errors import NotFound

from ..domain import AUTHORITY_RANK, normalise_value
from ..domain import MemoryRecord as DomainRecord
from ..models import KeyDefinition, MemoryRecord, MemorySource, Tombstone
from ..withholding import withheld_count_annotation, withheld_memory_count_annotation
from .resolution import Remembered

# ---------------------------------------------------------------------------------------------
# Reads of the pages (new functions only: the reads above stay as the API and resolver use them)


def key_templates(keys: Iterable[str] | None = None) -> dict[str, str]:
    """The registry's sentence templates for the pages ("Your dog is called {value}"), by key;
    keys without one are left out. One query."""
    qs = KeyDefinition.objects.exclude(template="")
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return dict(qs.values_list("key", "template"))


@dataclasses.dataclass(frozen=True)
class Skeleton:
    """What stays of a forgotten record (F2): where and when, never the value."""

    id: str
    key: str
    scope_id: str
    valid_from: datetime
    recorded_at: datetime


def memory_skeletons(user, ids: Iterable[str]) -> list[Skeleton]:
    """Forgotten records of `user` among `ids` (one query; none without ids)."""
    wanted = []
    for value in ids:
        try:
            wanted.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    if not wanted:
        return []
    rows = MemoryRecord.objects.filter(user=user, pk__in=wanted, status="forgotten").values_list(
        "id", "key", "scope_id", "valid_from", "recorded_at"
    )
    return [
        Skeleton(str(i), key, scope_id, valid_from, recorded_at)
        for i, key, scope_id, valid_from, recorded_at in rows
    ]


def no_longer_true(remembered: Remembered) -> list[DomainRecord]:
    """What was marked no longer true (W10) and holds nothing now: per retracted slot (the
    scoped key; a value slot for a `many` key) whose resolver answer has no active record, the
    record that was current when it was retracted (R6 order: authority, valid time, version).
    A `many` key's correction retracts the old value slot at the instant it records the new
    value: that is a correction, not a "no longer true", and is left out. Reads nothing."""
    many = remembered.registry.is_many
    active_slots = {
        (r.scope_id, r.key, normalise_value(r.value) if many(r.key) else "")
        for r in remembered.active
    }
    corrected_at = {
        (r.scope_id, r.key, r.recorded_at)
        for r in remembered.records
        if r.authority == "user-corrected"
    }
    best: dict[tuple, DomainRecord] = {}
    for r in remembered.records:
        if r.retracted_at is None or r.status == "forgotten":
            continue
        slot = (r.scope_id, r.key, normalise_value(r.value) if many(r.key) else "")
        if slot in active_slots or (
            many(r.key) and (r.scope_id, r.key, r.retracted_at) in corrected_at
        ):
            continue
        rank = (r.retracted_at, AUTHORITY_RANK[r.authority], r.valid_from, r.version, r.id)
        held = best.get(slot)
        if held is None or rank > (
            held.retracted_at,
            AUTHORITY_RANK[held.authority],
            held.valid_from,
            held.version,
            held.id,
        ):
            best[slot] = r
    return sorted(best.values(), key=lambda r: (r.retracted_at, r.id), reverse=True)


@dataclasses.dataclass(frozen=True)
class ForgottenEntry:
    """A tombstone as the forgotten page shows it (F1): never a value."""

    id: str
    key: str
    scope_id: str
    one_value: bool
    forgotten_at: datetime
    forgotten_by: str


def tombstone_list(user):
    """`GET /tombstones`: the user's tombstones, newest first (a queryset to paginate), each
    with how many messages (F6) and other memories (F7.2) it withholds."""
    return (
        Tombstone.objects.filter(user=user)
        .select_related("user")
        .annotate(
            withheld_messages=withheld_count_annotation(),
            withheld_memories=withheld_memory_count_annotation(),
        )
        .order_by("-forgotten_at", "id")
    )


def tombstone_get(tombstone_id) -> Tombstone:
    """`GET /tombstones/{id}`: the tombstone with its user (one query), or a 404 (C4)."""
    tombstone = (
        Tombstone.objects.select_related("user")
        .annotate(
            withheld_messages=withheld_count_annotation(),
            withheld_memories=withheld_memory_count_annotation(),
        )
        .filter(pk=tombstone_id)
        .first()
    )
    if tombstone is None:
        raise NotFound("No such tombstone.")
    return tombstone


def forgotten_entries(user) -> list[ForgottenEntry]:
    """The user's tombstones, newest first, with who asked (one query)."""
    rows = (
        Tombstone.objects.filter(user=user)
        .order_by("-forgotten_at", "id")
        .values_list("id", "key", "scope_id", "value_hash", "forgotten_at", "forgotten_by")
    )
    return [
        ForgottenEntry(str(i), key, scope_id, bool(hashed), at, by)
        for i, key, scope_id, hashed, at, by in rows
    ]


# ---------------------------------------------------------------------------------------------
# What the transcript, "Your data" and "What was used" read of memory (turns.selectors)


def memory_sources_of(user, conversation) -> list[tuple]:
    """(message id, memory id) for every provenance link of `user`'s memories to a message of
    `conversation`: one query."""
    return list(
        MemorySource.objects.filter(
            memory__user=user, message__conversation=conversation
        ).values_list("message_id", "memory_id")
    )


def forgotten_skeletons(user, ids: Iterable) -> dict[str, tuple[str, datetime]]:
    """The forgotten skeletons (F2) among `ids`: id → (key, forget time). One query."""
    return {
        str(i): (key, since)
        for i, key, since in MemoryRecord.objects.filter(
            user=user, pk__in=list(ids), status="forgotten"
        ).values_list("id", "key", "status_since")
    }


def memory_counts(user) -> dict[str, int]:
    """How many memories (not forgotten) and forgets `user` has, for "Your data"."""
    return {
        "memories": MemoryRecord.objects.filter(user=user).exclude(status="forgotten").count(),
        "forgotten": Tombstone.objects.filter(user=user).count(),
    }


def records_named(user, ids: Iterable) -> list[tuple]:
    """`user`'s records among `ids` as (id, key, value, status, status_since, scope_id,
    version, supersedes_id): what a stored plan names (SPEC E2). One query."""
    return list(
        MemoryRecord.objects.filter(user=user, pk__in=list(ids)).values_list(
            "id", "key", "value", "status", "status_since", "scope_id", "version", "supersedes_id"
        )
    )
