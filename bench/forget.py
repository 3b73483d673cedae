"""The cost of a forget (SPEC F6): a user with many messages forgets a memory, and the forget
withholds what held it — the source messages and every message of the user's conversations
that mentions the value as whole words, matched in keyset pages.

One user, one conversation of `n` messages (about one in twenty mentions the value), a
memory learnt from one of them. Each round asserts the memory again (the previous forget
undone), then times `forget_key` alone — the whole transaction: tombstone, purge, the
matching and the links — and counts its statements. The p50 is compared with the target
(300 ms at 10,000 messages on PostgreSQL)."""

from __future__ import annotations

import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

TARGET_MS = 300.0
TEXTS = (
    "We watered the basil on the rooftop today.",
    "The rain kept me inside all afternoon, so I read for a while.",
    "Tell me again what we talked about in the greenhouse.",
    "I think the lamp needs a new bulb before the weekend.",
)


def run(n_messages: int, rounds: int, log) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from conversations.models import Character, Conversation, Message
    from conversations.scopes import Scope
    from memory.forgetting import forget_key, tombstone_delete
    from memory.models import Tombstone
    from memory.services import memory_assert

    user = get_user_model().objects.create(username=f"bench-forget-{n_messages}")
    character, _ = Character.objects.get_or_create(
        slug="bench-forget", defaults={"name": "Bench", "created_at": datetime.now(UTC)}
    )
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    conversation = Conversation.objects.create(
        user=user, character=character, created_at=t0, last_seq=n_messages
    )
    messages = [
        Message(
            id=uuid.uuid4(),
            user=user,
            conversation=conversation,
            seq=i,
            role="user" if i % 2 else "assistant",
            content="My cat Miso sat on the windowsill." if i % 20 == 0 else TEXTS[i % len(TEXTS)],
            created_at=t0 + timedelta(seconds=i),
        )
        for i in range(1, n_messages + 1)
    ]
    Message.objects.bulk_create(messages, batch_size=2_000)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    source = str(messages[19].pk)
    samples, statements, withheld = [], [], 0
    for _ in range(rounds):
        memory_assert(
            user=user, key="cat.name", value="Miso", scope=Scope("user"), sources=[source]
        )
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            tombstone = forget_key(user=user, key="cat.name", scope_id="*")
            samples.append((time.perf_counter() - started) * 1000)
        statements.append(len(queries))
        withheld = tombstone.withheld_messages
        tombstone_delete(tombstone_id=tombstone.pk)
    assert not Tombstone.objects.filter(user=user).exists()
    p50 = statistics.median(samples)
    log(
        f"  forget with {n_messages:,} messages: p50 {p50:.1f} ms over {rounds} rounds, "
        f"{withheld} messages withheld, {max(statements)} statements"
    )
    return {
        "messages": n_messages,
        "rounds": rounds,
        "p50_ms": p50,
        "max_ms": max(samples),
        "withheld": withheld,
        "statements": max(statements),
        "target_ms": TARGET_MS,
    }
