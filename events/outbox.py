"""V1: the events a change leaves, built from ids, states, versions and times — never a value,
message content or key (§12: a key may hold private words; a copy looks a record up by id).

Writers add these rows in the transaction of the change: through the turn's `RowWriter`
(one statement on PostgreSQL) or with `record`, which refuses to run outside a transaction
so an event can never be written after the change committed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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


def event_scope(kind: str, character: str | None = None, conversation: str | None = None) -> dict:
    """V5: a scope in the API's shape with only the references its kind has — never a null
    member, and never a scene's id (scene ids are the user's words): a scene is named by its
    conversation."""
    out: dict = {"kind": kind}
    if kind == "character":
        out["character"] = character
    if kind in ("conversation", "scene"):
        out["conversation"] = conversation
    return out


def event_scope_of_id(scope_id: str) -> dict:
    """V5: the event scope of a stored scope id (`user:<ref>`, `character:<ref>:<slug>`,
    `conversation:<id>`, `scene:<id>:<scene>`), and `{"kind": "everywhere"}` for a forget's
    `*` (every scope)."""
    if scope_id == "*":
        return {"kind": "everywhere"}
    kind, _, rest = scope_id.partition(":")
    if kind == "character":
        return event_scope(kind, character=rest.partition(":")[2])
    if kind in ("conversation", "scene"):
        return event_scope(kind, conversation=rest.partition(":")[0])
    return event_scope("user")


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
    """A new record. The scope as the API shapes it, without a scene's id (V5: the user's
    words); `valid_until` so a copy expires the record by itself (a window ending makes no
    event)."""
    return _event(
        MEMORY_CREATED,
        user_ref,
        at,
        {
            "memory": memory,
            "scope": event_scope(scope_kind, character, conversation),
            "version": version,
            "authority": authority,
            "valid_from": iso_z(valid_from),
            "valid_until": iso_z(valid_until),
            "supersedes": supersedes,
        },
    )


def memory_changed(user_ref: str, *, memory: str, by: str, at: datetime) -> Event:
    """A write superseded a stored record (W5): its E1 state is `superseded`, by `by`."""
    return _event(MEMORY_CHANGED, user_ref, at, {"memory": memory, "state": "superseded", "by": by})


def memory_retracted(
    user_ref: str, *, memory: str, valid_until: datetime, retracted_at: datetime
) -> Event:
    """W10 closed a stored record at `retracted_at` (V5: "retracted" is not a state). Its E1
    state then, in its own scope: `expired` once its window closed, `not-yet-valid` for a
    record that had not started (its window is left empty at its start)."""
    state = "not-yet-valid" if valid_until > retracted_at else "expired"
    return _event(
        MEMORY_CHANGED,
        user_ref,
        retracted_at,
        {
            "memory": memory,
            "state": state,
            "by": None,
            "valid_until": iso_z(valid_until),
            "retracted_at": iso_z(retracted_at),
        },
    )


def memory_forgotten(
    user_ref: str,
    *,
    tombstone: str,
    scope_id: str,
    memories: Sequence[str],
    withheld_message_ids: Sequence[str],
    withheld_memory_ids: Sequence[str] = (),
    forgotten_by: str,
    at: datetime,
) -> Event:
    """F1/F2: the tombstone, its scope (V5: as the API shapes it, `{"kind": "everywhere"}`
    for a forget of every scope), the records it purged, the messages it withholds (F6) and the
    user's other memories it withholds (F7.2) — each id list bounded (V5)."""
    return _event(
        MEMORY_FORGOTTEN,
        user_ref,
        at,
        {
            "tombstone": tombstone,
            "scope": event_scope_of_id(scope_id),
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


# The times an event's `data` carries (V5: the record's own), as `iso_z` strings.
DATA_TIMES = ("valid_from", "valid_until", "retracted_at")


def move_times(user_ref: str, moved: Callable[[datetime], datetime]) -> None:
    """V5: when a user's records are moved in time (the demo's schedule), their events move
    with them — `occurred_at` and every time in `data` — so the events keep carrying the
    records' own times."""
    rows = list(Event.objects.filter(user_ref=user_ref))
    for row in rows:
        row.occurred_at = moved(row.occurred_at)
        row.data = {
            name: iso_z(moved(datetime.fromisoformat(value)))
            if name in DATA_TIMES and value is not None
            else value
            for name, value in row.data.items()
        }
    Event.objects.bulk_update(rows, ["occurred_at", "data"], batch_size=500)
