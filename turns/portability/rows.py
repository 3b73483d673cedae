"""The rows of the export file (SPEC §9) that are the conversation's and the policy's: each
section's exporter writes one stored row as the file holds it, and the section's declaration
below it (`config.portability.Section`) is what the export and the import both read — the
import compares a stored row with the file's through the same exporter, and makes a new row
from the file's by the declaration's fields. A new field of a row joins the file with a line in
its exporter and one in its section's `fields` or `others` (and one in `shape`, which
validates it). Memory's rows are memory's (`memory.portability.rows`). The user object's
fields have one home here too, with `turns.portability.shape.SnapshotUserInput`, which
validates them: a new account field joins the file with a line in `user_object` and one in
`user_object_apply`; a memory setting joins it in `memory.portability.rows`."""

from __future__ import annotations

from config.clock import iso_z
from config.portability import RowImport, Section, text_or_none
from conversations.models import Character, Conversation, Message, Turn
from conversations.scopes import scope_dict
from policy.models import DecisionLog, MediaJob, PolicyAnswer, PolicyRule

# ---------------------------------------------------------------------------------------------
# The user object: ONE place for its account fields (with `shape.SnapshotUserInput`, which
# validates them); the profile's fields follow them (`memory.portability.rows.profile_fields`).


def user_object(user, profile_fields: dict) -> dict:
    return {
        "ref": user.username,
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "date_joined": iso_z(user.date_joined),
        **profile_fields,
    }


def user_object_apply(user, data: dict, *, created: bool) -> None:
    """Import the user object's fields. An existing user keeps its own; a recreated one gets
    the file's. (The profile's fields — the secret, which must agree with stored hashes, the
    time zone and the switches — are memory's: `memory.portability.profile_import`.)"""
    if not created:
        return
    user.email = data.get("email", "")
    user.first_name = data.get("first_name", "")
    user.last_name = data.get("last_name", "")
    if data.get("date_joined"):
        user.date_joined = data["date_joined"]


# ---------------------------------------------------------------------------------------------
# The sections: rows as the export file's dicts (also used to compare an imported row with a
# stored one), each followed by its section's declaration


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


CONVERSATIONS = Section(
    "conversations",
    Conversation,
    "conversation",
    row=conversation_row,
    fields="id title created_at last_seq",
    others=lambda v, c, rows: {"character": rows.characters[v["character"]]},
)


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


MESSAGES = Section(
    "messages",
    Message,
    "message",
    row=message_row,
    fields="id seq role content created_at",
    others=lambda v, c, rows: {"conversation_id": v["conversation"]},
    # Derived from the tombstones' links (F6), which an import restores beside what is stored.
    not_compared=("withheld",),
)


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


TURNS = Section(
    "turns",
    Turn,
    "turn",
    row=turn_row,
    fields="id turn_key scene status created_at learning plan_snapshot plan_hash",
    others=lambda v, c, rows: {
        "conversation_id": v["conversation"],
        "user_message_id": v["user_message"],
        "reply_message_id": v.get("reply_message"),
        "extracted": c["extracted"],
    },
    # The plan snapshot: bookkeeping of the last plan asked for, not content.
    not_compared=("plan_snapshot", "plan_hash"),
)


def _scope(kind: str, character_id, conversation_id, scene, slugs: dict) -> dict:
    return scope_dict(kind, slugs.get(character_id), text_or_none(conversation_id), scene)


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


def _rule_others(v: dict, c: dict, rows: RowImport) -> dict:
    scope, kind = v["scope"], v["scope"]["kind"]
    return {
        "capability_id": v["capability"],
        "scope_kind": kind,
        "character": rows.characters[scope["character"]] if kind == "character" else None,
        "conversation_id": scope.get("conversation"),
        "scene": scope.get("scene"),
        "supersedes_id": v.get("supersedes"),
    }


def _same_rule(row: PolicyRule, mine: dict, theirs: dict) -> tuple[dict, dict]:
    if row.supersedes_id is None and theirs.get("supersedes"):
        theirs["supersedes"] = None  # its predecessor was deleted here (SET_NULL)
    return mine, theirs


POLICY_RULES = Section(
    "policy_rules",
    PolicyRule,
    "policy rule",
    row=rule_row,
    fields="id effect source requested_by valid_from valid_until revoked_at version created_at",
    others=_rule_others,
    same=_same_rule,
)


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


DECISIONS = Section(
    "decisions",
    DecisionLog,
    "decision",
    row=decision_row,
    fields="id capability requested_by effect reason defaults_version user_version decided_at "
    "requester",
    others=lambda v, c, rows: {
        "rule_ids": [str(r) for r in v["rule_ids"]],
        "scope_ids": list(v["scope_ids"]),
    },
)


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


ANSWERS = Section(
    "answers",
    PolicyAnswer,
    "answer",
    row=answer_row,
    fields="id answer remember answered_at",
    others=lambda v, c, rows: {
        "decision_id": v["decision"],
        "rule_id": v.get("rule"),
        "media_job_id": v.get("media_job"),
    },
)


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


MEDIA_JOBS = Section(
    "media_jobs",
    MediaJob,
    "media job",
    row=job_row,
    fields="id decision_id start_decision_id created_at started_at finished_at",
    others=lambda v, c, rows: {
        "capability_id": v["capability"],
        "character": rows.characters[v["character"]] if v.get("character") else None,
        "conversation_id": v.get("conversation"),
        **{f: v[f] for f in JOB_FIELDS if f != "decision_rule_ids"},
        "decision_rule_ids": [str(r) for r in v["decision_rule_ids"]],
    },
)
