"""Export (SPEC §9): everything that is one user's, as one JSON object — the export file,
format `companion-memory/3` (`references.FORMAT`).

It holds conversations, messages, turns, memories (windows, versions, edges, sources, evidence
time, recorded_at), tombstones, retractions, idempotency records, policy rules, the policy
version, decisions, answers and media jobs, plus the catalog rows they use (characters and key
registry entries) and the user's value-hash secret (F1), so a value-level forget keeps working
after a move. Support's reveals of the user's private text are exported read-only (S2). Each
section is written by one exporter of `turns.portability.rows`, or of memory's
(`memory.portability`, which reads the user's memory rows itself), in a constant number of
queries."""

from __future__ import annotations

from config.clock import db_now, iso_z
from conversations.models import Character, Conversation, Message, Turn
from memory.portability import memory_export
from policy.models import DecisionLog, MediaJob, PolicyAnswer, PolicyRule, UserPolicyVersion
from policy.selectors import policy_version_of
from support.selectors import reveals_export

from .references import FORMAT
from .rows import (
    answer_row,
    character_row,
    conversation_row,
    decision_row,
    job_row,
    message_row,
    rule_row,
    turn_row,
    user_object,
)

# ---------------------------------------------------------------------------------------------
# Export


def user_export(*, user) -> dict:
    """The export file of one user, in a constant number of queries."""
    conversations = list(Conversation.objects.filter(user=user).order_by("created_at", "id"))
    memory = memory_export(user)  # memory's rows, F6 and F7.2's links among them
    rules = list(PolicyRule.objects.filter(user=user).order_by("created_at", "id"))
    jobs = list(MediaJob.objects.filter(user=user).order_by("created_at", "id"))
    character_ids = {c.character_id for c in conversations} | memory.character_ids
    character_ids |= {r.character_id for r in rules if r.character_id}
    character_ids |= {j.character_id for j in jobs if j.character_id}
    characters = list(Character.objects.filter(pk__in=character_ids).order_by("slug"))
    slugs = {c.pk: c.slug for c in characters}
    version = (
        UserPolicyVersion.objects.filter(user=user).values_list("version", flat=True).first() or 0
    )

    versions = policy_version_of(user)
    held = memory.withheld_messages  # F6
    return {
        "format": FORMAT,
        "exported_at": iso_z(db_now()),
        "user": user_object(user, memory.user_fields()),
        "characters": [character_row(c) for c in characters],
        "conversations": [conversation_row(c, slugs) for c in conversations],
        "messages": [
            message_row(m, held)
            for m in Message.objects.filter(user=user).order_by("conversation_id", "seq")
        ],
        "turns": [turn_row(t) for t in Turn.objects.filter(user=user).order_by("created_at", "id")],
        **memory.sections(slugs),  # memories, tombstones, retractions, idempotency
        "policy_rules": [rule_row(r, slugs) for r in rules],
        "policy_version": {"defaults": versions.defaults, "user": max(version, versions.user)},
        "decisions": [
            decision_row(d)
            for d in DecisionLog.objects.filter(user=user).order_by("decided_at", "id")
        ],
        "answers": [
            answer_row(a)
            for a in PolicyAnswer.objects.filter(user=user).order_by("answered_at", "id")
        ],
        "media_jobs": [job_row(j, slugs) for j in jobs],
        "keys": memory.key_rows(),
        "reveals": reveals_export(user),  # S2: read-only; an import ignores it
    }
