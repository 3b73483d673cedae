"""SPEC V5: an id list in an event holds at most 1,000 ids; beyond, the event says how many
there are (`<list>_count`) and that the list is cut (`<list>_truncated: true`), and a consumer
reads the tombstone for the rest. Applied to every id list of `memory.forgotten` and
`tombstone.deleted` (V1, F6, F7.2)."""

import uuid

import pytest
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from conversations.models import Conversation, Message
from conversations.scopes import Scope
from events import outbox
from events.models import Event
from memory import forgetting
from memory import services as memory_services
from memory.withholding import withheld_counts
from tests.factories import CharacterFactory, ConversationFactory, UserFactory

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True)


def ids(n: int) -> list[str]:
    return [str(uuid.UUID(int=i)) for i in range(n)]


@PROPERTY
@given(st.lists(st.uuids().map(str), unique=True, max_size=2_500))
def test_it_keeps_at_most_1000_ids_the_first_in_order_and_counts_the_rest(given_ids):
    """V5, against a slow reference: the list is the sorted ids cut at 1,000; count and
    truncated are there exactly when ids were cut, and count is how many there were."""
    found = outbox.id_list("withheld_messages", reversed(given_ids))
    ordered = sorted(given_ids)
    expected = {"withheld_messages": ordered[:1000]}
    if len(ordered) > 1000:
        expected |= {"withheld_messages_count": len(ordered), "withheld_messages_truncated": True}
    assert found == expected


@pytest.mark.parametrize(
    ("n", "extra"),
    [
        (0, {}),
        (1000, {}),
        (1001, {"released_memories_count": 1001, "released_memories_truncated": True}),
    ],
)
def test_it_cuts_a_list_only_beyond_1000_ids(n, extra):
    """V5's boundary: 1,000 ids are a whole list; the 1,001st makes it cut."""
    assert outbox.id_list("released_memories", ids(n)) == {
        "released_memories": ids(n)[:1000],
        **extra,
    }


@pytest.fixture
def crowded(db):
    """A conversation of 1,001 messages that mention Miso, and the memory they taught."""
    user = UserFactory(username="sam")
    memory_services.ensure_profile(user)
    conv = ConversationFactory(user=user, character=CharacterFactory(slug="rowan"))
    now = timezone.now()
    Message.objects.bulk_create(
        Message(
            conversation=conv,
            user=user,
            seq=i + 1,
            role="user",
            content=f"Miso did thing {i}.",
            created_at=now,
        )
        for i in range(1001)
    )
    Conversation.objects.filter(pk=conv.pk).update(last_seq=1001)
    record = memory_services.memory_assert(
        user=user, key="cat.name", value="Miso", scope=Scope("user")
    ).record
    return user, record


def test_it_bounds_the_withheld_and_released_messages_of_a_forget_and_its_undo(crowded):
    """V1 + V5: a forget that withholds 1,001 messages lists the first 1,000 ids with the count
    and `truncated`; the tombstone counts all of them; its undo's released list is bounded
    the same way. No value in either event."""
    user, record = crowded
    every = sorted(str(m) for m in Message.objects.filter(user=user).values_list("pk", flat=True))
    tombstone = forgetting.memory_forget(record_id=record.id)
    forgot = Event.objects.filter(type="memory.forgotten").get().data
    assert forgot["withheld_messages"] == every[:1000]
    assert forgot["withheld_messages_count"] == 1001
    assert forgot["withheld_messages_truncated"] is True
    assert withheld_counts([tombstone.pk]) == {str(tombstone.pk): 1001}  # the rest: the tombstone
    forgetting.tombstone_delete(tombstone_id=tombstone.pk)
    undone = Event.objects.filter(type="tombstone.deleted").get().data
    assert undone == {
        "tombstone": str(tombstone.pk),
        "released_messages": every[:1000],
        "released_messages_count": 1001,
        "released_messages_truncated": True,
        "released_memories": [],
    }
    dumped = str(forgot) + str(undone)
    assert "Miso" not in dumped and "cat.name" not in dumped
