"""V1: the events a change leaves, built from ids, states, versions and times — never a value,
message content or key (§12: a key may hold private words; a copy looks a record up by id).

Writers add these rows in the transaction of the change: through the turn's `RowWriter`
(one statement on PostgreSQL) or with `record`, which refuses to run outside a transaction
so an event can never be written after the change committed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import transaction

from config.clock import iso_z

from .models import Event

MEMORY_CREATED = "memory.created"
MEMORY_CHANGED = "memory.changed"
MEMORY_FORGOTTEN = "memory.forgotten"
TOMBSTONE_DELETED = "tombstone.deleted"
SETTINGS_CHANGED = "settings.changed"
POLICY_CHANGED = "policy.changed"
CONVERSATION_DELETED = "conversation.deleted"
USER_DELETED = "user.deleted"
EVENT_TYPES = (
    MEMORY_CREATED,
    MEMORY_CHANGED,
    MEMORY_FORGOTTEN,
    TOMBSTONE_DELETED,
    SETTINGS_CHANGED,
    POLICY_CHANGED,
    CONVERSATION_DELETED,
    USER_DELETED,
)


# V5: an id list in an event holds at most this many ids; a consumer reads the tombstone for
# the rest.
ID_LIST_MAX = 1000


def _event(type_: str, user_ref: str | None, at: datetime, data: dict) -> Event:
    return Event(type=type_, user_ref=user_ref or "", occurred_at=at, data=data)


def id_list(name: str, ids: Iterable) -> dict:
    """V5: the id list `name` of an event, sorted and bounded: at most `ID_LIST_MAX` ids (the
    first in sorted order); beyond, `<name>_count` (how many there are) and
    `<name>_truncated: true` beside it. Within the bound the list stands alone, so the events
    of everyday changes keep their shape."""
    ordered = sorted(str(i) for i in ids)
    found = {name: ordered[:ID_LIST_MAX]}
    if len(ordered) > ID_LIST_MAX:
        found[f"{name}_count"] = len(ordered)
        found[f"{name}_truncated"] = True
    return found


def memory_created(
    user_ref: str,
    *,
    memory: str,
    scope_kind: str,
    character: str | None,
    conversation: str | None,
    version: int,
    authority: str,
    valid_from: datetime,
    valid_until: datetime | None,
    supersedes: str | None,
    at: datetime,
) -> Event:
    """A new record. The scope by kind and ids (a scene's name is the user's words: left
    out); `valid_until` so a copy expires the record by itself (a window ending makes no
    event)."""
    return _event(
        MEMORY_CREATED,
        user_ref,
        at,
        {
            "memory": memory,
            "scope": {"kind": scope_kind, "character": character, "conversation": conversation},
            "version": version,
            "authority": authority,
            "valid_from": iso_z(valid_from),
            "valid_until": iso_z(valid_until),
            "supersedes": supersedes,
        },
    )


def memory_changed(
    user_ref: str, *, memory: str, state: str, at: datetime, by: str | None = None
) -> Event:
    """A write changed a stored record's state: `superseded` (by the record `by`) or
    `retracted` (W10)."""
    return _event(MEMORY_CHANGED, user_ref, at, {"memory": memory, "state": state, "by": by})


def memory_forgotten(
    user_ref: str,
    *,
    tombstone: str,
    scope_kind: str,
    memories: Sequence[str],
    withheld_message_ids: Sequence[str],
    withheld_memory_ids: Sequence[str] = (),
    forgotten_by: str,
    at: datetime,
) -> Event:
    """F1/F2: the tombstone, the records it purged, the messages it withholds (F6) and the
    user's other memories it withholds (F7.2) — each id list bounded (V5)."""
    return _event(
        MEMORY_FORGOTTEN,
        user_ref,
        at,
        {
            "tombstone": tombstone,
            "scope_kind": scope_kind,
            **id_list("memories", memories),
            **id_list("withheld_messages", withheld_message_ids),
            **id_list("withheld_memories", withheld_memory_ids),
            "forgotten_by": forgotten_by,
        },
    )


def tombstone_deleted(
    user_ref: str,
    *,
    tombstone: str,
    released_message_ids: Sequence[str],
    released_memory_ids: Sequence[str] = (),
    at: datetime,
) -> Event:
    """F4: the tombstone is gone; the messages (F6) and memories (F7.2) it withheld that no
    other tombstone withholds are released — each id list bounded (V5)."""
    return _event(
        TOMBSTONE_DELETED,
        user_ref,
        at,
        {
            "tombstone": tombstone,
            **id_list("released_messages", released_message_ids),
            **id_list("released_memories", released_memory_ids),
        },
    )


def settings_changed(
    user_ref: str, *, learn: bool, use: bool, changed_by: str, at: datetime
) -> Event:
    return _event(
        SETTINGS_CHANGED, user_ref, at, {"learn": learn, "use": use, "changed_by": changed_by}
    )


def policy_changed(
    user_ref: str | None, *, policy_version: int, rules: Iterable[str], at: datetime
) -> Event:
    """D7: the user's (no user: the product defaults') new policy version and the rules the
    change touched."""
    return _event(
        POLICY_CHANGED,
        user_ref,
        at,
        {"policy_version": policy_version, "rules": sorted(str(r) for r in rules)},
    )


def conversation_deleted(user_ref: str, *, conversation: str, at: datetime) -> Event:
    return _event(CONVERSATION_DELETED, user_ref, at, {"conversation": conversation})


def record(events: Sequence[Event]) -> None:
    """Write `events` in the caller's transaction (V1: never after the change committed)."""
    if not events:
        return
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("Events are written in the transaction of their change (V1).")
    Event.objects.bulk_create(list(events))


def user_deleted(user_ref: str, *, at: datetime) -> None:
    """V1: deleting a user deletes the user's events and leaves one `user.deleted`, carrying
    the ref (so copies erase it) and nothing else."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("Events are written in the transaction of their change (V1).")
    Event.objects.filter(user_ref=user_ref).delete()
    Event.objects.create(type=USER_DELETED, user_ref=user_ref, occurred_at=at, data={})
