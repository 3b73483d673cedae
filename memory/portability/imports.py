"""Memory's part of an import (SPEC §9), inside the import's one transaction: every row already
passed the file's validation, and `config.portability.RowImport` carries the file, the counts
and the user. The turn's orchestration (`turns.portability.imports`) calls these steps in the
order their references need: the registry entries before the user, the profile with the user,
the records once the conversations' messages are there, the bookkeeping after them, and the
existing tombstones last (F3)."""

from __future__ import annotations

from config.errors import ImportConflict
from config.portability import RowImport, conflict

from ..forgetting import purge_covered
from ..models import (
    IdempotencyRecord,
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    SlotRetraction,
    Tombstone,
)
from ..selectors.records import tombstones_of
from ..withholding import withhold_links, withhold_memory_links
from .rows import MEMORIES, TOMBSTONES, idempotency_row, profile_apply, retraction_row

# ---------------------------------------------------------------------------------------------
# The registry and the profile


def keys_import(rows: RowImport) -> None:
    """Registry entries (catalog): created when missing; a cardinality that differs from the
    stored one — or `many` for a key other records already use as `one` — is a conflict."""
    wanted = rows.v["keys"]
    stored = KeyDefinition.objects.in_bulk([k["key"] for k in wanted])
    new = []
    for k in wanted:
        existing = stored.get(k["key"])
        if existing is None:
            if k["cardinality"] != "one" and MemoryRecord.objects.filter(key=k["key"]).exists():
                raise ImportConflict(
                    f"Key {k['key']!r} is used as single-valued here, many in the snapshot."
                )
            new.append(KeyDefinition(key=k["key"], cardinality=k["cardinality"], label=k["label"]))
        elif existing.cardinality != k["cardinality"]:
            raise ImportConflict(
                f"Key {k['key']!r} has cardinality {existing.cardinality} here, "
                f"{k['cardinality']} in the snapshot."
            )
        else:
            rows.counts["skipped"] += 1
    rows.create(KeyDefinition, new, "key")


def profile_import(user, data: dict) -> tuple[MemoryProfile, bool]:
    """The user object's profile fields: the secret (`_secret_import`), then the time zone and
    the switches (`rows.profile_apply`). Answers the profile and whether the file's switches
    were taken."""
    profile = _secret_import(user, data.get("secret"))
    changed = profile_apply(profile, data)
    if changed:
        profile.save(update_fields=changed)
    return profile, "learn" in changed


def _secret_import(user, secret: str | None) -> MemoryProfile:
    """F1: the secret keying value hashes must carry over, unless hashes made with another
    one are already stored here. Returns the user's profile."""
    profile = MemoryProfile.objects.select_for_update().filter(user=user).first()
    if not secret:
        if profile is None:
            profile = MemoryProfile.objects.create(user=user)
        return profile
    if profile is None:
        profile = MemoryProfile.objects.create(user=user, secret=secret)
    elif profile.secret != secret:
        hashed = (
            Tombstone.objects.filter(user=user, value_hash__isnull=False).exists()
            or SlotRetraction.objects.filter(user=user).exclude(value_hash="").exists()
            or IdempotencyRecord.objects.filter(user=user).exists()
        )
        if hashed:
            raise ImportConflict("The user's value-hash secret differs from the snapshot's.")
        profile.secret = secret
        profile.save(update_fields=["secret"])
    return profile


# ---------------------------------------------------------------------------------------------
# The records


def memories_import(rows: RowImport) -> list[MemoryRecord]:
    """The memory records and their source links (once the file's characters are imported).
    Answers the records created."""
    sources_of: dict = {}
    ids = [v["id"] for v in rows.v["memories"]]
    for memory_id, message_id in MemorySource.objects.filter(memory_id__in=ids).values_list(
        "memory_id", "message_id"
    ):
        sources_of.setdefault(memory_id, []).append(str(message_id))
    created = rows.merge(MEMORIES, rows.slugs, sources_of)
    sources = {v["id"]: v["sources"] for v in rows.v["memories"]}
    links = [MemorySource(memory_id=r.id, message_id=m) for r in created for m in sources[r.id]]
    if links:
        MemorySource.objects.bulk_create(links, batch_size=500)
    return created


# ---------------------------------------------------------------------------------------------
# Tombstones, retractions and idempotency records


def bookkeeping_import(rows: RowImport) -> list[Tombstone]:
    """Tombstones with the links each carries, retractions and idempotency records. Answers
    the tombstones created."""
    created = _tombstones_import(rows)
    _retractions_import(rows)
    _idempotency_import(rows)
    return created


def _tombstones_import(rows: RowImport) -> list[Tombstone]:
    user = rows.user
    created = rows.merge(TOMBSTONES)
    # F6 and F7.2: the links each tombstone carries, restored beside what is stored.
    stored = {str(t.pk): t for t in Tombstone.objects.filter(user=user)}
    for v, c in rows.rows("tombstones"):
        tombstone = stored[str(v["id"])]
        withhold_links(tombstone, c["withheld_messages"], c["withheld_replies"])
        withhold_memory_links(tombstone, c["withheld_memories"])
    return created


def _retractions_import(rows: RowImport) -> None:
    """Retractions have no id: one with the same content as a stored one is skipped."""
    user = rows.user
    have = {tuple(retraction_row(r).values()) for r in SlotRetraction.objects.filter(user=user)}
    new = []
    for v, c in rows.rows("retractions"):
        ident = tuple(c.values())
        if ident in have:
            rows.counts["skipped"] += 1
            continue
        have.add(ident)
        new.append(
            rows.new_row(SlotRetraction, v, "key value_hash retracted_at", scope_id=v["scope"])
        )
    rows.create(SlotRetraction, new, "retraction")


def _idempotency_import(rows: RowImport) -> None:
    """Idempotency records by key: a stored one with other content is a conflict."""
    user = rows.user
    stored = {
        i.key: i
        for i in IdempotencyRecord.objects.filter(
            user=user, key__in=[v["key"] for v in rows.v["idempotency"]]
        )
    }
    new = []
    for v, c in rows.rows("idempotency"):
        existing = stored.get(v["key"])
        if existing is not None:
            if idempotency_row(existing) != dict(c):
                raise conflict("idempotency key", v["key"])
            rows.counts["skipped"] += 1
            continue
        new.append(
            rows.new_row(
                IdempotencyRecord,
                v,
                "key payload_hmac outcome reason created_at",
                record_id=v.get("record"),
            )
        )
    rows.create(IdempotencyRecord, new, "idempotency record")


# ---------------------------------------------------------------------------------------------
# Existing tombstones


def tombstones_apply(user, *, imported: list[MemoryRecord]) -> list[str]:
    """F3: the user's tombstones, those stored and those imported, apply to the records the
    import created. Answers the ids of the records they purged."""
    if not imported:
        return []
    tombstones = tombstones_of(user)
    if not tombstones:
        return []
    secret = MemoryProfile.objects.get(user=user).secret_bytes()
    return [p.id for p in purge_covered(user, tombstones, secret)]
