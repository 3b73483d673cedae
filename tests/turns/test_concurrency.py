"""I4 under real concurrency on PostgreSQL: threads, one connection each."""

import pytest

from conversations.models import Message, Turn
from tests.concurrency import run_concurrently
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from tests.helpers import postgres_only
from turns import creation, replies

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def conv():
    return ConversationFactory(
        user=UserFactory(username="racer"), character=CharacterFactory(slug="rowan")
    )


@pytest.mark.parametrize("n", [5, 20])
def test_it_commits_one_reply_under_concurrent_retries(conv, n):
    """I4: n concurrent reply retries (some with other content) commit one message; every
    caller gets that first message, exactly one of them as new."""
    turn = creation.turn_create(conversation_id=conv.pk, turn_key="t1", content="hi").turn
    results = run_concurrently(
        lambda i: replies.turn_commit_reply(turn_id=turn.pk, content=f"reply {i % 2}"), n
    )
    assert all(kind == "ok" for kind, _ in results), results
    stored = Message.objects.filter(conversation=conv, role="assistant")
    assert stored.count() == 1
    assert {r.message.pk for _, r in results} == {stored.get().pk}
    assert sorted(r.replayed for _, r in results) == [False] + [True] * (n - 1)


def test_it_creates_one_turn_under_concurrent_requests_with_one_key(conv):
    """I4: concurrent turn creation with one turn_key stores one turn and one message."""
    results = run_concurrently(
        lambda i: creation.turn_create(
            conversation_id=conv.pk, turn_key="same", content="My dog's name is Rex."
        ),
        10,
    )
    assert all(kind == "ok" for kind, _ in results), results
    assert Turn.objects.filter(conversation=conv).count() == 1
    assert Message.objects.filter(conversation=conv).count() == 1
    assert sorted(r.created for _, r in results) == [False] * 9 + [True]


def test_it_allocates_distinct_seqs_under_concurrent_turns(conv):
    """§7: seq is allocated under a lock: concurrent turns with different keys never collide."""
    results = run_concurrently(
        lambda i: creation.turn_create(
            conversation_id=conv.pk, turn_key=f"k{i}", content=f"message {i}"
        ),
        10,
    )
    assert all(kind == "ok" for kind, _ in results), results
    seqs = sorted(Message.objects.filter(conversation=conv).values_list("seq", flat=True))
    assert seqs == list(range(1, 11))


def test_it_writes_concurrent_batches_of_one_user_one_at_a_time():
    """W8/W5 for batched turn writes: threads creating turns in several
    conversations of one user, each writing a batch of facts, get unique, gap-free versions per
    scoped key; the same value said by all is stored once and merged into (W5) by the rest;
    every message's source link lands."""
    from memory.models import MemoryRecord, MemorySource
    from memory.services import ensure_profile

    user = UserFactory(username="batcher")
    ensure_profile(user)
    character = CharacterFactory(slug="rowan")
    convs = [ConversationFactory(user=user, character=character) for _ in range(8)]
    results = run_concurrently(
        lambda i: creation.turn_create(
            conversation_id=convs[i].pk,
            turn_key="t",
            content=f"I like jazz. I live in City{i}. My dog's name is Dog{i}.",
        ),
        8,
    )
    assert all(kind == "ok" for kind, _ in results), results
    for key in ("user.lives_in", "dog.name", "user.likes"):
        versions = sorted(
            MemoryRecord.objects.filter(user=user, key=key).values_list("version", flat=True)
        )
        assert versions == list(range(1, len(versions) + 1)), key
    assert MemoryRecord.objects.filter(user=user, key="user.lives_in").count() == 8
    assert MemoryRecord.objects.filter(user=user, key="user.likes").count() == 1
    outcomes = sorted(r.turn.extracted[0]["outcome"] for _, r in results)
    assert outcomes == ["created"] + ["unchanged"] * 7
    jazz = MemoryRecord.objects.get(user=user, key="user.likes")
    assert MemorySource.objects.filter(memory=jazz).count() == 8
    # Each later lives_in supersedes the one before it (W6): one chain, one open head.
    rows = list(MemoryRecord.objects.filter(user=user, key="user.lives_in").order_by("version"))
    assert [r.supersedes_id for r in rows[1:]] == [r.pk for r in rows[:-1]]
