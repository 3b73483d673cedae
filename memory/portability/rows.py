"""Memory's rows of the export file (SPEC §9): each writes one stored row as the file holds it,
and the import compares an imported row with a stored one through the same function
(`tombstone_content` leaves out what an import adds to rather than compares). The profile's
part of the user object has its home here too: a new memory setting joins the file with a line
in `profile_fields` and one in `profile_apply` (and a field of the file's user object, which
`turns.portability.shape` validates)."""

from __future__ import annotations

from config.clock import iso_z
from config.portability import text_or_none
from conversations.scopes import Scope, scope_dict

from ..models import (
    IdempotencyRecord,
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    SlotRetraction,
    Tombstone,
)

# ---------------------------------------------------------------------------------------------
# The profile's part of the user object


def profile_fields(profile: MemoryProfile | None) -> dict:
    """The user object's fields that the profile holds, in the file's order."""
    return {
        "secret": profile.secret if profile else None,
        # The zone the pages show times in (null: the service's).
        "time_zone": (profile.time_zone or None) if profile else None,
        # I8: the memory switches, with who changed them last and when.
        "memory_settings": {
            "learn": profile.learn if profile else True,
            "use": profile.use if profile else True,
            "changed_at": iso_z(profile.settings_changed_at) if profile else None,
            "changed_by": (profile.settings_changed_by or None) if profile else None,
        },
    }


def profile_apply(profile: MemoryProfile, data: dict) -> list[str]:
    """The profile's part of the user object, set on `profile` (its import saves it). A
    choice the user made here wins over the file's: the time zone is set only where none is
    chosen, the memory switches only where they were never changed here. (Neither switch
    affects the import itself, I8.) Answers the fields set."""
    changed = []
    if data.get("time_zone") and not profile.time_zone:
        profile.time_zone = data["time_zone"]
        changed.append("time_zone")
    settings = data.get("memory_settings")
    if settings and profile.settings_changed_at is None:
        profile.learn, profile.use = settings["learn"], settings["use"]
        profile.settings_changed_at = settings.get("changed_at")
        profile.settings_changed_by = settings.get("changed_by") or ""
        changed += ["learn", "use", "settings_changed_at", "settings_changed_by"]
    return changed


# ---------------------------------------------------------------------------------------------
# Rows as the export file's dicts (also used to compare an imported row with a stored one)


def memory_scope_id(ref: str, scope: dict) -> str:
    """The scope id (SPEC §1) of a memory's scope object in the export file."""
    return Scope(
        kind=scope["kind"],
        character=scope.get("character"),
        conversation=scope.get("conversation"),
        scene=scope.get("scene"),
    ).scope_id(ref)


def memory_row(r: MemoryRecord, slugs: dict, sources: dict) -> dict:
    return {
        "id": str(r.pk),
        "key": r.key,
        "value": r.value,
        "scope": scope_dict(
            r.scope_kind, slugs.get(r.character_id), text_or_none(r.conversation_id), r.scene
        ),
        "status": r.status,
        "status_since": iso_z(r.status_since),
        "authority": r.authority,
        "confidence": r.confidence,
        "valid_from": iso_z(r.valid_from),
        "valid_until": iso_z(r.valid_until),
        "retracted_at": iso_z(r.retracted_at),
        "recorded_at": iso_z(r.recorded_at),
        "evidence_time": iso_z(r.evidence_time),
        "sources": sorted(sources.get(r.pk, [])),
        "supersedes": text_or_none(r.supersedes_id),
        "version": r.version,
        "told_by": told_by_row(r),
    }


def told_by_row(r: MemoryRecord) -> list[dict]:
    """SPEC §15 M3: who told the memory besides its sources, self-contained (an export holds
    no connection): the connection by id and the name it had, or nothing."""
    if not r.told_by_connection:
        return []
    return [{"kind": "connection", "id": r.told_by_connection, "name": r.told_by_name}]


def tombstone_row(
    t: Tombstone, withheld: dict | None = None, withheld_memories: dict | None = None
) -> dict:
    messages, replies = (withheld or {}).get(str(t.pk), ([], []))
    return {
        "id": str(t.pk),
        "scope": t.scope_id,
        "key": t.key,
        "value_hash": t.value_hash,
        "forgotten_at": iso_z(t.forgotten_at),
        "blocks_sources_before": iso_z(t.blocks_sources_before),
        "forgotten_by": t.forgotten_by,
        "withheld_messages": messages,
        "withheld_replies": replies,
        # F7.2: the user's other memories it withholds, sorted.
        "withheld_memories": (withheld_memories or {}).get(str(t.pk), []),
    }


TOMBSTONE_LINKS = ("withheld_messages", "withheld_replies", "withheld_memories")


def tombstone_content(t: dict) -> dict:
    """A tombstone without its links (F6, F7.2): an import adds the file's to what is
    stored."""
    return {k: v for k, v in t.items() if k not in TOMBSTONE_LINKS}


def retraction_row(r: SlotRetraction) -> dict:
    return {
        "scope": r.scope_id,
        "key": r.key,
        "value_hash": r.value_hash,
        "retracted_at": iso_z(r.retracted_at),
    }


def idempotency_row(i: IdempotencyRecord) -> dict:
    return {
        "key": i.key,
        "payload_hmac": i.payload_hmac,
        "outcome": i.outcome,
        "reason": i.reason,
        "record": text_or_none(i.record_id),
        "created_at": iso_z(i.created_at),
    }


def key_row(k: KeyDefinition) -> dict:
    return {"key": k.key, "cardinality": k.cardinality, "label": k.label}
