"""The turn's statements built once per process (docs/DESIGN.md; issue: nothing on the hot
path rebuilt per request): the conversation's lock answers what its ORM query answers,
related objects included, and compiles no SQL after the first turn; the extractor's "it"
and the history are text built once."""

import pytest
from django.db import connection, transaction
from django.db.models.sql.compiler import SQLCompiler

from memory.services import ensure_profile
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from turns import storage
from turns.creation import turn_create

pytestmark = pytest.mark.django_db

FIELDS = {
    "conversation": ("id", "user_id", "character_id", "title", "last_seq", "created_at"),
    "user": ("id", "username", "email", "is_active", "date_joined"),
    "profile": ("user_id", "secret", "learn", "use"),
    "character": ("id", "slug", "name"),
}


def parts(conversation):
    return {
        "conversation": [getattr(conversation, f) for f in FIELDS["conversation"]],
        "user": [getattr(conversation.user, f) for f in FIELDS["user"]],
        "profile": [getattr(conversation.user.memory_profile, f) for f in FIELDS["profile"]],
        "character": [getattr(conversation.character, f) for f in FIELDS["character"]],
    }


@pytest.fixture
def conv():
    user = UserFactory(username="locked")
    ensure_profile(user)
    return ConversationFactory(user=user, character=CharacterFactory(slug="rowan"), title="t")


@pytest.mark.parametrize("owned", [False, True])
def test_it_locks_with_the_answer_of_its_orm_query(conv, owned):
    user_id = conv.user_id if owned else None
    with transaction.atomic():
        reference = storage.locked_conversation_query(conv.pk, user_id).first()
        locked = storage.lock_conversation(connection.alias, str(conv.pk), user_id)
    assert parts(locked) == parts(reference)
    # The related objects came with the row (select_related), not from more queries.
    assert locked._state.fields_cache.keys() == reference._state.fields_cache.keys()


def test_it_locks_no_other_users_conversation(conv):
    other = UserFactory(username="other")
    with transaction.atomic():
        assert storage.lock_conversation(connection.alias, conv.pk, other.pk) is None


def test_it_compiles_no_conversation_lock_or_record_statement_after_the_first_turn(
    conv, monkeypatch
):
    turn_create(conversation_id=conv.pk, turn_key="t1", content="My dog's name is Rex.")
    compiled = []
    real = SQLCompiler.as_sql

    def counted(self, *args, **kwargs):
        compiled.append(self.query.model.__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counted)
    turn_create(conversation_id=conv.pk, turn_key="t2", content="It is a good boy.")
    assert "Conversation" not in compiled and "MemoryRecord" not in compiled, compiled
