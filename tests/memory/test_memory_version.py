"""The user's memory version (memory.triggers): every statement that changes a memory table
gives the users it touched a new version, whoever writes — a service, a queryset `update()`,
raw SQL, a cascade from a deleted conversation — and nothing else changes it. A process
reuses what it read only while the version holds (docs/DESIGN.md), so these are the
invalidation's guarantees."""

import pytest
from django.db import connection

from conversations.scopes import Scope
from conversations.services import conversation_delete
from memory.forgetting import forget_key, tombstone_delete
from memory.models import MemoryRecord, MemorySource, SlotRetraction, Tombstone
from memory.selectors.records import memory_version_of
from memory.services import memory_assert, memory_retract
from tests.factories import ConversationFactory, MessageFactory, UserFactory
from tests.helpers import ON_POSTGRES

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    user = UserFactory(username="versioned")
    other = UserFactory(username="bystander")
    conversation = ConversationFactory(user=user)
    message = MessageFactory(conversation=conversation)
    return user, other, conversation, message


def changes(user, action) -> bool:
    before = memory_version_of(user.pk)
    action()
    after = memory_version_of(user.pk)
    return after is not None and after != before


def test_it_changes_on_every_kind_of_memory_write(world):
    user, other, conversation, message = world
    assert memory_version_of(user.pk) is None  # no memory write yet
    record = {}

    def assert_one():
        record["r"] = memory_assert(
            user=user, key="dog.name", value="Rex", scope=Scope("user"), sources=[str(message.pk)]
        ).record

    assert changes(user, assert_one)  # a record and its source link
    assert changes(user, lambda: MemoryRecord.objects.filter(user=user).update(confidence=0.5))
    assert changes(user, lambda: memory_retract(record_id=record["r"].id))  # W10: a retraction
    assert changes(user, lambda: SlotRetraction.objects.filter(user=user).delete())

    def raw_update():
        table = connection.ops.quote_name(MemoryRecord._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET confidence = 0.9 WHERE user_id = %s", [user.pk])

    assert changes(user, raw_update)
    assert changes(user, lambda: MemorySource.objects.filter(memory__user=user).delete())
    tombstone = {}
    assert changes(
        user, lambda: tombstone.update(t=forget_key(user=user, key="cat.name", scope_id="*"))
    )
    assert changes(user, lambda: tombstone_delete(tombstone_id=tombstone["t"].pk))
    assert changes(
        user,
        lambda: Tombstone.objects.create(
            user=user,
            scope_id="*",
            key="x.name",
            forgotten_at=message.created_at,
            blocks_sources_before=message.created_at,
        ),
    )


def test_it_changes_when_a_conversation_is_deleted_through_its_cascades(world):
    """Deleting a conversation deletes its messages' source links and its scoped records."""
    user, _, conversation, message = world
    memory_assert(
        user=user, key="dog.name", value="Rex", scope=Scope("user"), sources=[str(message.pk)]
    )
    assert changes(user, lambda: conversation_delete(conversation_id=conversation.pk))


def test_it_stays_as_it_is_through_reads_and_other_users_writes(world):
    user, other, conversation, message = world
    memory_assert(user=user, key="dog.name", value="Rex", scope=Scope("user"))
    version = memory_version_of(user.pk)
    list(MemoryRecord.objects.filter(user=user))
    MessageFactory(conversation=conversation)  # a message is not memory
    memory_assert(user=other, key="dog.name", value="Max", scope=Scope("user"))
    assert memory_version_of(user.pk) == version
    assert memory_version_of(other.pk) not in (None, version)


@pytest.mark.skipif(not ON_POSTGRES, reason="TRUNCATE is PostgreSQL's (SQLite has none)")
def test_it_forgets_every_version_on_a_truncate(world):
    user, other, _, _ = world
    memory_assert(user=user, key="dog.name", value="Rex", scope=Scope("user"))
    memory_assert(user=other, key="dog.name", value="Max", scope=Scope("user"))
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE memory_slotretraction")
    assert memory_version_of(user.pk) is None and memory_version_of(other.pk) is None
