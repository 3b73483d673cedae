"""Bulk-load generated worlds into the benchmark database (bulk_create, no services: the
rows are exactly what the generator produced, and loading 30k rows takes seconds)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from .data import CHARACTERS, NOW, SCENES, World, message_content

BATCH = 2000


@dataclass
class Loaded:
    user: str
    user_pk: int
    conversation: str  # the main conversation
    character: str
    turn: str | None  # a turn on the main conversation's last (user) message
    records: int
    messages: int

    def resolve_body(self) -> str:
        """The body of `POST /memory/resolve` for this world: its main conversation, in the
        first scene, at the benchmark's `NOW`."""
        context = {
            "user": self.user,
            "character": self.character,
            "conversation": self.conversation,
            "scene": SCENES[0],
            "now": NOW.isoformat().replace("+00:00", "Z"),
        }
        return json.dumps({"context": context})


def ensure_characters() -> dict[str, int]:
    from conversations.models import Character

    existing = {c.slug: c.pk for c in Character.objects.all()}
    missing = [
        Character(slug=slug, name=name, created_at=NOW - timedelta(days=500))
        for slug, name in CHARACTERS
        if slug not in existing
    ]
    if missing:
        Character.objects.bulk_create(missing)
        existing = {c.slug: c.pk for c in Character.objects.all()}
    return existing


# The fields a generated (pure-core) record and tombstone name as their stored rows do.
RECORD_NAMES = (
    "id key value scope_id status status_since authority confidence valid_from valid_until "
    "recorded_at evidence_time retracted_at version"
)
TOMBSTONE_NAMES = "id scope_id key value_hash forgotten_at blocks_sources_before"


def same_fields(generated, names: str) -> dict:
    """The fields in `names` (space-separated) of a generated object, for its stored row."""
    return {name: getattr(generated, name) for name in names.split()}


def record_row(r, user, characters: dict[str, int]):
    """The stored row of a generated record `r` (a pure-core `memory.domain.MemoryRecord`) of
    `user`, its character named by id (`characters`, from `ensure_characters`)."""
    from memory.models import MemoryRecord

    kind = r.scope.kind
    return MemoryRecord(
        user=user,
        **same_fields(r, RECORD_NAMES),
        scope_kind=kind,
        character_id=characters[r.scope.character] if kind == "character" else None,
        conversation_id=r.scope.conversation if kind in ("conversation", "scene") else None,
        scene=r.scope.scene if kind == "scene" else None,
        supersedes_id=r.supersedes,
    )


def load_world(world: World, *, with_turn: bool = True) -> Loaded:
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from conversations.models import Conversation, Message, Turn
    from memory.models import MemoryProfile, MemoryRecord, MemorySource, Tombstone

    User = get_user_model()
    characters = ensure_characters()
    with transaction.atomic():
        user = User(username=world.user, date_joined=NOW - timedelta(days=500))
        user.set_unusable_password()
        user.save()
        MemoryProfile.objects.create(user=user, secret=world.secret.hex())

        conversations = []
        messages = []
        for index, conv in enumerate(world.conversations):
            extra = 1 if (index == 0 and with_turn) else 0
            conversations.append(
                Conversation(
                    id=conv.id,
                    user=user,
                    character_id=characters[conv.character],
                    title=f"bench {index}",
                    created_at=conv.message_times[0] - timedelta(minutes=1),
                    last_seq=conv.n_messages + extra,
                )
            )
            for seq, (mid, at) in enumerate(
                zip(conv.message_ids, conv.message_times, strict=True), 1
            ):
                role, content = message_content(world.seed, conv.id, seq)
                messages.append(
                    Message(
                        id=mid,
                        user=user,
                        conversation_id=conv.id,
                        seq=seq,
                        role=role,
                        content=content,
                        created_at=at,
                    )
                )
        Conversation.objects.bulk_create(conversations)
        Message.objects.bulk_create(messages, batch_size=BATCH)

        turn_id = None
        main = world.main
        if with_turn:
            current = Message.objects.create(
                user=user,
                conversation_id=main.id,
                seq=main.n_messages + 1,
                role="user",
                content="Do you remember what we planted on the rooftop, and what I named it?",
                created_at=main.message_times[-1] + timedelta(minutes=3),
            )
            turn = Turn.objects.create(
                user=user,
                conversation_id=main.id,
                turn_key="bench-turn",
                scene="greenhouse",
                user_message=current,
                created_at=current.created_at,
            )
            turn_id = str(turn.pk)

        rows = []
        links = []
        for r in world.records:
            rows.append(record_row(r, user, characters))
            links.extend(MemorySource(memory_id=r.id, message_id=m) for m in r.sources)
        MemoryRecord.objects.bulk_create(rows, batch_size=BATCH)
        MemorySource.objects.bulk_create(links, batch_size=BATCH)
        Tombstone.objects.bulk_create(
            [Tombstone(user=user, **same_fields(t, TOMBSTONE_NAMES)) for t in world.tombstones],
            batch_size=BATCH,
        )
    return Loaded(
        user=world.user,
        user_pk=user.pk,
        conversation=main.id,
        character=main.character,
        turn=turn_id,
        records=len(world.records),
        messages=main.n_messages,
    )


def analyze() -> None:
    """Fresh planner statistics after a bulk load (what autovacuum would do soon anyway)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
