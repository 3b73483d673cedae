"""The events memory writes leave (SPEC V1), built from what a write decided: ids, states,
versions and times — never a value or a key. `plan_events` rides in the writer of the write
(the turn's one statement on PostgreSQL); the other builders are called by the forgetting,
settings and deleting services in their own transactions."""

from __future__ import annotations

from collections.abc import Sequence

from events import outbox

from .write_rules import WritePlan


def plan_events(user_ref: str, plan: WritePlan) -> list:
    """`memory.created` for each new record (with `memory.changed` `superseded` for the record
    it supersedes) and `memory.changed` for each record W10 closed, with its E1 state and
    `retracted_at` (V5)."""
    events = []
    for r in plan.inserts:
        events.append(
            outbox.memory_created(
                user_ref,
                memory=r.id,
                scope_kind=r.scope.kind,
                character=r.scope.character,
                conversation=r.scope.conversation,
                version=r.version,
                authority=r.authority,
                valid_from=r.valid_from,
                valid_until=r.valid_until,
                supersedes=r.supersedes,
                at=r.recorded_at,
            )
        )
        if r.supersedes:
            events.append(
                outbox.memory_changed(user_ref, memory=r.supersedes, by=r.id, at=r.recorded_at)
            )
    for rid, (valid_until, retracted_at) in plan.closes.items():
        events.append(
            outbox.memory_retracted(
                user_ref, memory=rid, valid_until=valid_until, retracted_at=retracted_at
            )
        )
    return events


def forgotten(
    user,
    tombstone,
    purged: Sequence[str],
    *,
    withheld_message_ids: Sequence[str] = (),
    withheld_memory_ids: Sequence[str] = (),
) -> None:
    """`memory.forgotten` in the forget's transaction. `withheld_message_ids`: the messages
    the forget withholds from prompts (F6); `withheld_memory_ids`: the user's other memories
    it withholds (F7.2) — both as the forget computed them."""
    outbox.record(
        [
            outbox.memory_forgotten(
                user.username,
                tombstone=str(tombstone.pk),
                scope_id=tombstone.scope_id,
                memories=purged,
                withheld_message_ids=withheld_message_ids,
                withheld_memory_ids=withheld_memory_ids,
                forgotten_by=tombstone.forgotten_by,
                at=tombstone.forgotten_at,
            )
        ]
    )


def tombstone_deleted(
    user,
    tombstone_id,
    at,
    *,
    released_message_ids: Sequence[str] = (),
    released_memory_ids: Sequence[str] = (),
) -> None:
    """`tombstone.deleted` in the deletion's transaction, with the messages (F6) and the
    memories (F7.2) it released."""
    outbox.record(
        [
            outbox.tombstone_deleted(
                user.username,
                tombstone=str(tombstone_id),
                released_message_ids=released_message_ids,
                released_memory_ids=released_memory_ids,
                at=at,
            )
        ]
    )


def settings_changed(user, profile) -> None:
    outbox.record(
        [
            outbox.settings_changed(
                user.username,
                learn=profile.learn,
                use=profile.use,
                changed_by=profile.settings_changed_by,
                at=profile.settings_changed_at,
            )
        ]
    )
