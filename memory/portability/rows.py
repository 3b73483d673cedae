"""Memory's rows of the export file (SPEC §9): each writes one stored row as the file holds it,
and the section's declaration below it (`config.portability.Section`) is what the export and
the import both read — the import compares a stored row with the file's through the same
function, and makes a new row from the file's by the declaration's fields. The profile's
part of the user object has its home here too: a new memory setting joins the file with a line
in `profile_fields` and one in `profile_apply` (and a field of the file's user object, which
`turns.portability.shape` validates)."""

from __future__ import annotations

from config.clock import iso_z
from config.portability import RowImport, Section, text_or_none
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
# The sections: rows as the export file's dicts (also used to compare an imported row with a
# stored one), each followed by its section's declaration when an import merges it by id


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


def _record_others(v: dict, c: dict, rows: RowImport) -> dict:
    scope, kind = v["scope"], v["scope"]["kind"]
    teller = (v.get("told_by") or [{"id": "", "name": ""}])[0]
    return {
        "scope_kind": kind,
        "scope_id": memory_scope_id(rows.user.username, scope),
        "character": rows.characters[scope["character"]] if kind == "character" else None,
        "conversation_id": scope.get("conversation"),
        "scene": scope.get("scene"),
        "supersedes_id": v.get("supersedes"),
        "told_by_connection": str(teller["id"]),
        "told_by_name": teller["name"],
    }


def _same_record(row: MemoryRecord, mine: dict, theirs: dict) -> tuple[dict, dict]:
    theirs.setdefault("told_by", [])  # files written before §15 name no teller
    if row.status == "forgotten":
        # A tombstone purged it here (F3): the skeleton is the same row.
        for field in ("value", "status", "status_since", "sources"):
            mine.pop(field)
            theirs.pop(field)
    return mine, theirs


MEMORIES = Section(
    "memories",
    MemoryRecord,
    "memory",
    row=memory_row,
    fields="id key value status status_since authority confidence valid_from valid_until "
    "recorded_at evidence_time retracted_at version",
    others=_record_others,
    same=_same_record,
)


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


TOMBSTONES = Section(
    "tombstones",
    Tombstone,
    "tombstone",
    row=tombstone_row,
    fields="id key value_hash forgotten_at blocks_sources_before forgotten_by",
    others=lambda v, c, rows: {"scope_id": v["scope"]},
    # Its links (F6, F7.2): an import adds the file's to what is stored.
    not_compared=("withheld_messages", "withheld_replies", "withheld_memories"),
)


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
