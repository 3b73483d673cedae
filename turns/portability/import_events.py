"""V1 for an import (SPEC §9): the events of what an import created, in its transaction —
`memory.created` for each record it brought (one that an existing tombstone purged at once
stays unknown to copies), `memory.forgotten` for each tombstone, `policy.changed` for its
rules, `settings.changed` when the export file's switches were taken. A record's and a
tombstone's events carry their own times (V5); the rules and switches, the import's."""

from __future__ import annotations

from config.clock import db_now
from events import outbox
from memory.withholding import withheld_lists, withheld_memory_lists
from policy.selectors import user_policy_version


def import_events(user, *, memories, tombstones, rules, profile) -> None:
    at = db_now()
    ref = user.username
    events = [
        outbox.memory_created(
            ref,
            memory=str(r.pk),
            scope_kind=r.scope_kind,
            character=r.character.slug if r.character_id else None,
            conversation=str(r.conversation_id) if r.conversation_id else None,
            version=r.version,
            authority=r.authority,
            valid_from=r.valid_from,
            valid_until=r.valid_until,
            supersedes=str(r.supersedes_id) if r.supersedes_id else None,
            at=r.recorded_at,
        )
        for r in memories
        if r.status != "forgotten"
    ]
    # F6 and F7.2: the links the import restored.
    withheld = withheld_lists(user) if tombstones else {}
    withheld_memories = withheld_memory_lists(user) if tombstones else {}
    events += [
        outbox.memory_forgotten(
            ref,
            tombstone=str(t.pk),
            scope_id=t.scope_id,
            memories=[],
            withheld_message_ids=withheld.get(str(t.pk), ([], []))[0],
            withheld_memory_ids=withheld_memories.get(str(t.pk), []),
            forgotten_by=t.forgotten_by,
            at=t.forgotten_at,
        )
        for t in tombstones
    ]
    if rules:
        version = user_policy_version(user)
        events.append(
            outbox.policy_changed(ref, policy_version=version, rules=[r.pk for r in rules], at=at)
        )
    if profile is not None:
        events.append(
            outbox.settings_changed(
                ref,
                learn=profile.learn,
                use=profile.use,
                changed_by=profile.settings_changed_by or "import",
                at=at,
            )
        )
    outbox.record(events)
