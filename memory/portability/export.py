"""Memory's part of an export (SPEC §9): one user's memory rows, read in a constant number of
queries — the records with their sources, the tombstones with the links of what each
withholds (F6, F7.2), the retractions, the idempotency records, the registry entries the
records use, and the profile's part of the user object.

The export file (`turns.portability.export`) names characters by slug, and the characters it
holds include those of the records' scopes: it asks `character_ids` first, and the rows once
it knows the slugs (`sections`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import (
    IdempotencyRecord,
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    SlotRetraction,
    Tombstone,
)
from ..withholding import withheld_lists, withheld_memory_lists
from .rows import (
    idempotency_row,
    key_row,
    memory_row,
    profile_fields,
    retraction_row,
    tombstone_row,
)


@dataclass(frozen=True)
class MemoryExport:
    """One user's memory rows as they are stored, in the file's order."""

    records: list[MemoryRecord]
    sources: dict  # record id → the ids of its source messages
    profile: MemoryProfile | None
    withheld: dict  # F6: tombstone id → (the messages, the turns waiting for their reply)
    withheld_memories: dict  # F7.2: tombstone id → the records it withholds
    tombstones: list[Tombstone]
    retractions: list[SlotRetraction]
    idempotency: list[IdempotencyRecord]
    keys: list[KeyDefinition]

    @property
    def character_ids(self) -> set:
        """The characters of the records' scopes."""
        return {r.character_id for r in self.records if r.character_id}

    @property
    def withheld_messages(self) -> set[str]:
        """F6: the ids of the messages some tombstone withholds (a message's `withheld`)."""
        return {m for messages, _ in self.withheld.values() for m in messages}

    def user_fields(self) -> dict:
        """The user object's fields that the profile holds."""
        return profile_fields(self.profile)

    def sections(self, slugs: dict) -> dict:
        """The file's memory sections; `slugs` names each character by its slug."""
        return {
            "memories": [memory_row(r, slugs, self.sources) for r in self.records],
            "tombstones": [
                tombstone_row(t, self.withheld, self.withheld_memories) for t in self.tombstones
            ],
            "retractions": [retraction_row(r) for r in self.retractions],
            "idempotency": [idempotency_row(i) for i in self.idempotency],
        }

    def key_rows(self) -> list[dict]:
        """The registry entries the records use (catalog rows the file carries)."""
        return [key_row(k) for k in self.keys]


def memory_export(user) -> MemoryExport:
    """The memory rows of `user`, in nine queries whatever they hold."""
    records = list(MemoryRecord.objects.filter(user=user).order_by("key", "scope_id", "version"))
    sources: dict = {}
    for memory_id, message_id in MemorySource.objects.filter(memory__user=user).values_list(
        "memory_id", "message_id"
    ):
        sources.setdefault(memory_id, []).append(str(message_id))
    keys = sorted({r.key for r in records})
    return MemoryExport(
        records=records,
        sources=sources,
        profile=MemoryProfile.objects.filter(user=user).first(),
        withheld=withheld_lists(user),
        withheld_memories=withheld_memory_lists(user),
        tombstones=list(Tombstone.objects.filter(user=user).order_by("forgotten_at", "id")),
        retractions=list(SlotRetraction.objects.filter(user=user).order_by("retracted_at", "id")),
        idempotency=list(IdempotencyRecord.objects.filter(user=user).order_by("created_at", "id")),
        keys=list(KeyDefinition.objects.filter(key__in=keys).order_by("key")),
    )
