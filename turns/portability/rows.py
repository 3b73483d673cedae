"""The rows of the export file (SPEC §9): each section's exporter writes one stored row as the
file holds it, and the import compares an imported row with a stored one through the same
function (`*_content` leaves out what an import may not change). The user object's fields have
one home here too, with `turns.portability.shape.SnapshotUserInput`, which validates them: a new
per-user setting joins the file with a line in `user_object` and one in `user_object_apply`
or `user_profile_apply`."""

from __future__ import annotations

from config.clock import iso_z
from conversations.domain import scope_dict
from conversations.models import Character, Conversation, Message, Turn
from memory.models import IdempotencyRecord, MemoryProfile, MemoryRecord, SlotRetraction, Tombstone
from policy.models import DecisionLog, MediaJob, PolicyAnswer, PolicyRule


def text_or_none(value) -> str | None:
    return None if value is None else str(value)


# ---------------------------------------------------------------------------------------------
# The user object: ONE place for its fields (with `shape.SnapshotUserInput`, which validates
# them). A new per-user setting joins the export file with a line in each of these two functions
# and a field there.


def user_object(user, profile: MemoryProfile | None) -> dict:
    return {
        "ref": user.username,
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "date_joined": iso_z(user.date_joined),
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


def user_object_apply(user, data: dict, *, created: bool) -> None:
    """Import the user object's fields. An existing user keeps its own; a recreated one gets
    the file's. (The secret is handled by `_import_secret`: it must agree with stored
    hashes; the profile's fields by `user_profile_apply`.)"""
    if not created:
        return
    user.email = data.get("email", "")
    user.first_name = data.get("first_name", "")
    user.last_name = data.get("last_name", "")
    if data.get("date_joined"):
        user.date_joined = data["date_joined"]


def user_profile_apply(profile: MemoryProfile, data: dict) -> bool:
    """The profile's part of the user object. A choice the user made here wins over the
    file's: the time zone is set only where none is chosen, the memory switches only
    where they were never changed here. (Neither switch affects the import itself, I8.) True
    when the file's switches were taken."""
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
    if changed:
        profile.save(update_fields=changed)
    return "learn" in changed


# ---------------------------------------------------------------------------------------------
# Rows as the export file's dicts (also used to compare an imported row with a stored one)


def character_row(c: Character) -> dict:
    return {"slug": c.slug, "name": c.name, "created_at": iso_z(c.created_at)}


def conversation_row(c: Conversation, slugs: dict) -> dict:
    return {
        "id": str(c.pk),
        "character": slugs[c.character_id],
        "title": c.title,
        "created_at": iso_z(c.created_at),
        "last_seq": c.last_seq,
    }


def message_row(m: Message, withheld: set[str] = frozenset()) -> dict:
    return {
        "id": str(m.pk),
        "conversation": str(m.conversation_id),
        "seq": m.seq,
        "role": m.role,
        "content": m.content,
        "created_at": iso_z(m.created_at),
        "withheld": str(m.pk) in withheld,
    }


def message_content(m: dict) -> dict:
    """A message without `withheld`: derived from the tombstones' links (F6), which an import
    restores beside what is stored."""
    return {k: v for k, v in m.items() if k != "withheld"}


def turn_row(t: Turn) -> dict:
    return {
        "id": str(t.pk),
        "conversation": str(t.conversation_id),
        "turn_key": t.turn_key,
        "scene": t.scene,
        "status": t.status,
        "user_message": str(t.user_message_id),
        "reply_message": text_or_none(t.reply_message_id),
        "created_at": iso_z(t.created_at),
        "extracted": t.extracted,
        "learning": t.learning,
        "plan_snapshot": t.plan_snapshot,
        "plan_hash": t.plan_hash,
    }


def turn_content(t: dict) -> dict:
    """A turn without its plan snapshot: bookkeeping of the last plan asked for, not content."""
    return {k: v for k, v in t.items() if k not in ("plan_snapshot", "plan_hash")}


def _scope(kind: str, character_id, conversation_id, scene, slugs: dict) -> dict:
    return scope_dict(kind, slugs.get(character_id), text_or_none(conversation_id), scene)


def memory_row(r: MemoryRecord, slugs: dict, sources: dict) -> dict:
    return {
        "id": str(r.pk),
        "key": r.key,
        "value": r.value,
        "scope": _scope(r.scope_kind, r.character_id, r.conversation_id, r.scene, slugs),
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


def rule_row(r: PolicyRule, slugs: dict) -> dict:
    return {
        "id": str(r.pk),
        "capability": r.capability_id,
        "effect": r.effect,
        "source": r.source,
        "scope": _scope(r.scope_kind, r.character_id, r.conversation_id, r.scene, slugs),
        "requested_by": r.requested_by,
        "valid_from": iso_z(r.valid_from),
        "valid_until": iso_z(r.valid_until),
        "revoked_at": iso_z(r.revoked_at),
        "version": r.version,
        "supersedes": text_or_none(r.supersedes_id),
        "created_at": iso_z(r.created_at),
    }


def decision_row(d: DecisionLog) -> dict:
    return {
        "id": str(d.pk),
        "capability": d.capability,
        "requested_by": d.requested_by,
        "effect": d.effect,
        "reason": d.reason,
        "rule_ids": d.rule_ids,
        "defaults_version": d.defaults_version,
        "user_version": d.user_version,
        "scope_ids": d.scope_ids,
        "decided_at": iso_z(d.decided_at),
        "requester": d.requester,
    }


def answer_row(a: PolicyAnswer) -> dict:
    return {
        "id": str(a.pk),
        "decision": str(a.decision_id),
        "answer": a.answer,
        "remember": a.remember,
        "rule": text_or_none(a.rule_id),
        "media_job": text_or_none(a.media_job_id),
        "answered_at": iso_z(a.answered_at),
    }


JOB_FIELDS = (
    "idempotency_key",
    "requested_by",
    "scene",
    "status",
    "reason",
    "decision_effect",
    "decision_reason",
    "decision_rule_ids",
    "admission_defaults_version",
    "admission_user_version",
    "allowed_once",
    "start_defaults_version",
    "start_user_version",
)


def job_row(j: MediaJob, slugs: dict) -> dict:
    out = {
        "id": str(j.pk),
        "capability": j.capability_id,
        "character": slugs.get(j.character_id),
        "conversation": text_or_none(j.conversation_id),
        "decision_id": str(j.decision_id),
        "start_decision_id": text_or_none(j.start_decision_id),
        "created_at": iso_z(j.created_at),
        "started_at": iso_z(j.started_at),
        "finished_at": iso_z(j.finished_at),
    }
    out.update({f: getattr(j, f) for f in JOB_FIELDS})
    return out
