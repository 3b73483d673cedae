"""The row writer's statements (config.storage.RowWriter, docs/DESIGN.md habit 2): on
PostgreSQL a transaction's rows go out as one statement whose text Django compiles once per
shape — model, fields, number of rows, ON CONFLICT — while each write prepares only its
values. What a later write sends is what Django's compiler would send for it: the same text and
the same parameters, one VALUES row or one array per column (UNNEST), and the rows land."""

import uuid

import pytest
from django.db import connection
from psycopg.types.json import Jsonb

from config import storage
from config.storage import RowWriter
from conversations.models import Conversation, Message
from policy.models import DecisionLog
from tests.factories import ConversationFactory, UserFactory, at
from tests.helpers import ON_POSTGRES

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not ON_POSTGRES, reason="needs PostgreSQL: elsewhere rows go by the ORM"),
]


def comparable(params):
    """Parameters with psycopg's JSON wrappers opened (they compare by identity)."""
    if isinstance(params, list | tuple):
        return [comparable(p) for p in params]
    if isinstance(params, Jsonb):
        return ("jsonb", params.obj)
    return params


def decisions(user, n):
    return [
        DecisionLog(
            id=uuid.uuid4(),
            user=user,
            capability="tone.playful",
            requested_by="runtime",
            effect="allow",
            reason="default",
            rule_ids=[f"rule-{i}"],
            defaults_version=1,
            user_version=i,
            scope_ids=[f"user:{user.username}"],
            decided_at=at("2026-08-03T10:00:00Z"),
        )
        for i in range(n)
    ]


def compiled_afresh(step):
    saved = dict(storage._statements)
    storage._statements.clear()
    try:
        return storage.RowWriter._sql(step, connection)
    finally:
        storage._statements.clear()
        storage._statements.update(saved)


@pytest.mark.parametrize("n", [1, 3])
def test_it_sends_a_later_insert_as_django_compiles_it(n):
    user = UserFactory(username="writer")
    storage.RowWriter._sql(("insert", decisions(user, n), False), connection)  # the shape
    step = ("insert", decisions(user, n), False)
    sql, params = storage.RowWriter._sql(step, connection)
    fresh_sql, fresh_params = compiled_afresh(step)
    assert sql == fresh_sql
    assert comparable(params) == comparable(fresh_params)
    assert ("UNNEST(" in sql) is (n > 1)


def test_it_sends_a_later_update_as_django_compiles_it():
    conversation = ConversationFactory()
    storage.RowWriter._sql(("update", Conversation, conversation.pk, {"last_seq": 4}), connection)
    step = ("update", Conversation, conversation.pk, {"last_seq": 5})
    assert storage.RowWriter._sql(step, connection) == compiled_afresh(step)


def test_it_writes_rows_of_a_known_shape_again():
    conversation = ConversationFactory()
    user = conversation.user
    for seq in (1, 2):
        writer = RowWriter()
        writer.update(Conversation, conversation.pk, last_seq=seq)
        writer.insert(
            [
                Message(
                    id=uuid.uuid4(),
                    user=user,
                    conversation=conversation,
                    seq=seq,
                    role="user",
                    content=f"message {seq}",
                    created_at=at("2026-08-03T10:00:00Z"),
                )
            ]
        )
        writer.insert(decisions(user, 3))
        writer.flush()
    conversation.refresh_from_db()
    assert conversation.last_seq == 2
    assert list(
        Message.objects.filter(conversation=conversation).values_list("seq", "content")
    ) == [(1, "message 1"), (2, "message 2")]
    assert sorted(DecisionLog.objects.filter(user=user).values_list("user_version", flat=True)) == [
        0,
        0,
        1,
        1,
        2,
        2,
    ]
