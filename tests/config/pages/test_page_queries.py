"""Each page renders in a constant number of queries: the count for a user with 5
items equals the count for a user with 200 (DESIGN habit 6)."""

import pytest

from conversations.scopes import Scope
from memory.forgetting import forget_key, memory_forget
from memory.services import memory_assert
from policy.services import rule_create
from tests.factories import CharacterFactory, ConversationFactory, MessageFactory
from tests.page_costs import LARGE, SMALL, assert_constant, memories, person
from turns.creation import turn_create

pytestmark = pytest.mark.django_db


def test_it_costs_the_memory_list_the_same_for_5_or_200_memories(rowan, django_assert_num_queries):
    small, small_conv, small_client = person("small", rowan)
    large, large_conv, large_client = person("large", rowan)
    memories(small, small_conv, rowan, SMALL)
    memories(large, large_conv, rowan, LARGE)
    assert_constant(
        django_assert_num_queries, small_client, large_client, "/memories/", "/memories/"
    )
    assert_constant(
        django_assert_num_queries,
        small_client,
        large_client,
        "/memories/?q=value&character=captain-rowan",
        "/memories/?q=value&character=captain-rowan",
    )


def slot(user, conv, n):
    first = None
    for i in range(n):
        message = MessageFactory(conversation=conv, content=f"my dog is Dog {i}")
        record = memory_assert(
            user=user,
            key="dog.name",
            value=f"Dog {i}",
            scope=Scope("user"),
            authority="rule-extracted",
            sources=[str(message.pk)],
        ).record
        first = first or record
    memory_forget(
        record_id=memory_assert(
            user=user, key="dog.name", value="Last", scope=Scope("user"), authority="user-corrected"
        ).record.id,
        user=user,
    )
    memory_assert(
        user=user, key="dog.name", value="Again", scope=Scope("user"), authority="user-corrected"
    )
    return first


def test_it_costs_the_history_page_the_same_for_5_or_200_values(rowan, django_assert_num_queries):
    small, small_conv, small_client = person("small", rowan)
    large, large_conv, large_client = person("large", rowan)
    a, b = slot(small, small_conv, SMALL), slot(large, large_conv, LARGE)
    assert_constant(
        django_assert_num_queries,
        small_client,
        large_client,
        f"/memories/{a.id}/history",
        f"/memories/{b.id}/history",
    )


def rules(user, rowan, n):
    others = [CharacterFactory(slug=f"character-{i}") for i in range(3)]
    conversations = [ConversationFactory(user=user, character=c) for c in others]
    capabilities = [
        "tone.playful",
        "topic.work",
        "relationship.advance",
        "media.voice",
        "media.image",
    ]
    for i in range(n):
        kind = ("global", "character", "conversation")[i % 3]
        scope = {"kind": kind}
        if kind == "character":
            scope["character"] = (rowan, *others)[i % 4].slug
        if kind == "conversation":
            scope["conversation"] = str(conversations[i % 3].pk)
        rule_create(
            user=user,
            capability=capabilities[i % 5],
            effect=("allow", "deny", "ask")[i % 3],
            source="explicit-user",
            scope=scope,
        )


def test_it_costs_the_boundaries_page_the_same_for_5_or_200_rules(rowan, django_assert_num_queries):
    small, _, small_client = person("small", rowan)
    large, _, large_client = person("large", rowan)
    rule_create(
        user=None,
        capability="media.voice",
        effect="deny",
        source="product-default",
        scope={"kind": "global"},
    )
    rules(small, rowan, SMALL)
    rules(large, rowan, LARGE)
    assert_constant(
        django_assert_num_queries, small_client, large_client, "/boundaries/", "/boundaries/"
    )


def test_it_costs_the_forgotten_page_the_same_for_5_or_200_tombstones(
    rowan, django_assert_num_queries
):
    small, small_conv, small_client = person("small", rowan)
    large, large_conv, large_client = person("large", rowan)
    for user, conv, n in ((small, small_conv, SMALL), (large, large_conv, LARGE)):
        for i in range(n):
            scope_id = (
                "*",
                f"user:{user.username}",
                f"character:{user.username}:captain-rowan",
                f"conversation:{conv.pk}",
            )[i % 4]
            forget_key(user=user, key=f"fact.n{i}", scope_id=scope_id, value="x" if i % 2 else None)
    assert_constant(
        django_assert_num_queries,
        small_client,
        large_client,
        "/memories/forgotten/",
        "/memories/forgotten/",
    )


def transcript(user, conv, n):
    for i in range(n):
        text = f"I like thing {i}." if i % 2 else f"Just saying hello, number {i}."
        turn_create(conversation_id=conv.pk, turn_key=f"t{i}", content=text)
    MessageFactory(conversation=conv, role="assistant", content="Lovely.")


def test_it_costs_the_transcript_and_the_lists_the_same_for_5_or_200_messages(
    rowan, django_assert_num_queries
):
    small, small_conv, small_client = person("small", rowan)
    large, large_conv, large_client = person("large", rowan)
    transcript(small, small_conv, SMALL)
    transcript(large, large_conv, LARGE)
    for _ in range(LARGE - SMALL):
        ConversationFactory(user=large, character=rowan)
    assert_constant(
        django_assert_num_queries,
        small_client,
        large_client,
        f"/conversations/{small_conv.pk}/",
        f"/conversations/{large_conv.pk}/",
    )
    assert_constant(
        django_assert_num_queries, small_client, large_client, "/conversations/", "/conversations/"
    )
    assert_constant(django_assert_num_queries, small_client, large_client, "/data/", "/data/")
