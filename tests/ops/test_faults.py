"""Faults: a database error in the middle of a turn or a forget leaves no partial
state, and the retry succeeds; a retried request after a lost response returns the original
result."""

import pytest
from django.db import OperationalError

from config import storage
from conversations.models import Message, Turn
from conversations.scopes import Scope
from memory import forgetting
from memory import services as memory_services
from memory.models import MemoryRecord, MemorySource, Tombstone
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from turns import replies
from turns.creation import turn_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def conv():
    return ConversationFactory(
        user=UserFactory(username="sam"), character=CharacterFactory(slug="rowan")
    )


def boom(*args, **kwargs):
    raise OperationalError("connection lost")


def test_it_leaves_nothing_behind_when_a_turn_fails_midway(conv, monkeypatch):
    """The message, the turn and the extracted record are inserted, then the database fails:
    the whole turn rolls back."""
    real_flush = storage.RowWriter.flush

    def flush_then_fail(writer):
        real_flush(writer)
        assert (
            Message.objects.exists() and MemoryRecord.objects.exists()
        )  # written, not yet committed
        boom()

    monkeypatch.setattr(storage.RowWriter, "flush", flush_then_fail)
    with pytest.raises(OperationalError):
        turn_create(conversation_id=conv.pk, turn_key="t1", content="My dog's name is Rex.")
    assert (
        not Message.objects.exists()
        and not Turn.objects.exists()
        and not MemoryRecord.objects.exists()
    )
    conv.refresh_from_db()
    assert conv.last_seq == 0
    monkeypatch.undo()
    result = turn_create(conversation_id=conv.pk, turn_key="t1", content="My dog's name is Rex.")
    assert result.created and result.turn.user_message.seq == 1
    assert MemoryRecord.objects.get().value == "Rex"


def test_it_leaves_nothing_behind_when_a_forget_fails_midway(conv, monkeypatch):
    """The tombstone is written, then the purge fails: no tombstone, values intact."""
    user = conv.user
    record = memory_services.memory_assert(
        user=user, key="pet.name", value="Rex", scope=Scope("user")
    ).record
    monkeypatch.setattr(forgetting, "purge_covered", boom)
    with pytest.raises(OperationalError):
        forgetting.memory_forget(record_id=record.id)
    assert not Tombstone.objects.exists()
    assert MemoryRecord.objects.get().value == "Rex"
    monkeypatch.undo()
    forgetting.memory_forget(record_id=record.id)
    assert Tombstone.objects.count() == 1 and MemoryRecord.objects.get().value == ""


def test_it_leaves_nothing_behind_when_an_assert_fails_after_the_insert(conv, monkeypatch):
    """The record row and its sources are inserted, then the database fails: no record
    remains. (On PostgreSQL both go in one statement; on SQLite one after the other.)"""
    from tests.factories import MessageFactory

    msg = MessageFactory(conversation=conv)
    real_flush = storage.RowWriter.flush

    def flush_then_fail(writer):
        real_flush(writer)
        assert (
            MemoryRecord.objects.exists() and MemorySource.objects.exists()
        )  # written, not yet committed
        raise OperationalError("disk full")

    monkeypatch.setattr(storage.RowWriter, "flush", flush_then_fail)
    with pytest.raises(OperationalError):
        memory_services.memory_assert(
            user=conv.user, key="pet.name", value="Rex", scope=Scope("user"), sources=[str(msg.pk)]
        )
    assert not MemoryRecord.objects.exists() and not MemorySource.objects.exists()
    monkeypatch.undo()
    assert (
        memory_services.memory_assert(
            user=conv.user, key="pet.name", value="Rex", scope=Scope("user"), sources=[str(msg.pk)]
        ).outcome
        == "created"
    )


def test_it_returns_the_original_reply_after_a_lost_response(api, conv):
    turn = turn_create(conversation_id=conv.pk, turn_key="t1", content="hi").turn
    first = replies.turn_commit_reply(turn_id=turn.pk, content="Hello!")  # response lost
    retry = api.post(f"/api/v1/turns/{turn.pk}/reply", {"content": "Hello!"}, format="json")
    assert retry.status_code == 200 and retry.json()["message"]["id"] == str(first.message.pk)


def test_it_returns_the_original_assert_after_a_lost_response(api, conv):
    body = {
        "user": "sam",
        "key": "pet.name",
        "value": "Rex",
        "scope": {"kind": "user"},
        "idempotency_key": "lost-1",
    }
    first = api.post("/api/v1/memories", body, format="json").json()
    retry = api.post("/api/v1/memories", body, format="json")
    assert retry.status_code == 200 and retry.json()["outcome"] == "replayed"
    assert retry.json()["memory"] == first["memory"]
