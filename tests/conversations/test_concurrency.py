"""I4 under real concurrency on PostgreSQL: threads, one connection each."""

import pytest

from conversations import services
from conversations.models import Message, Turn
from tests.concurrency import run_concurrently
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from tests.helpers import postgres_only

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def conv():
    return ConversationFactory(user=UserFactory(username="racer"), character=CharacterFactory(slug="rowan"))


@pytest.mark.parametrize("n", [5, 20])
def test_it_commits_one_reply_under_concurrent_retries(conv, n):
    """I4: n concurrent reply retries (some with other content) commit one message; every
    caller gets that first message, exactly one of them as new."""
    turn = services.turn_create(conversation_id=conv.pk, turn_key="t1", content="hi").turn
    results = run_concurrently(
        lambda i: services.turn_commit_reply(turn_id=turn.pk, content=f"reply {i % 2}"), n
    )
    assert all(kind == "ok" for kind, _ in results), results
    replies = Message.objects.filter(conversation=conv, role="assistant")
    assert replies.count() == 1
    assert {r.message.pk for _, r in results} == {replies.get().pk}
    assert sorted(r.replayed for _, r in results) == [False] + [True] * (n - 1)


def test_it_creates_one_turn_under_concurrent_requests_with_one_key(conv):
    """I4: concurrent turn creation with one turn_key stores one turn and one message."""
    results = run_concurrently(
        lambda i: services.turn_create(conversation_id=conv.pk, turn_key="same", content="My dog's name is Rex."), 10
    )
    assert all(kind == "ok" for kind, _ in results), results
    assert Turn.objects.filter(conversation=conv).count() == 1
    assert Message.objects.filter(conversation=conv).count() == 1
    assert sorted(r.created for _, r in results) == [False] * 9 + [True]


def test_it_allocates_distinct_seqs_under_concurrent_turns(conv):
    """§7: seq is allocated under a lock: concurrent turns with different keys never collide."""
    results = run_concurrently(
        lambda i: services.turn_create(conversation_id=conv.pk, turn_key=f"k{i}", content=f"message {i}"), 10
    )
    assert all(kind == "ok" for kind, _ in results), results
    seqs = sorted(Message.objects.filter(conversation=conv).values_list("seq", flat=True))
    assert seqs == list(range(1, 11))
