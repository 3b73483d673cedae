"""Each page renders in a constant number of queries: the count for a user with 5
items equals the count for a user with 200 (DESIGN habit 6)."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.domain import Scope
from memory.forgetting import forget_key, memory_forget
from memory.services import memory_assert, memory_confirm
from policy.services import rule_create
from tests.factories import CharacterFactory, ConversationFactory, MessageFactory, UserFactory
from turns.creation import turn_create

pytestmark = pytest.mark.django_db

SMALL, LARGE = 5, 200


@pytest.fixture
def rowan(db):
    return CharacterFactory(slug="captain-rowan", name="Captain Rowan")


def person(name, rowan):
    user = UserFactory(username=name)
    conv = ConversationFactory(user=user, character=rowan, title=f"{name}'s chat")
    client = Client()
    client.force_login(user)
    return user, conv, client


def count(client, url) -> int:
    client.get(url)  # warm caches that are not per request (content types, templates)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


def assert_constant(django_assert_num_queries, small_client, large_client, small_url, large_url):
    expected = count(small_client, small_url)
    large_client.get(large_url)
    with django_assert_num_queries(expected):
        assert large_client.get(large_url).status_code == 200


def memories(user, conv, rowan, n):
    """n memories of every shape the list shows: three scopes, three certainties, sources,
    confirmations (a supersedes chain) and one forgotten."""
    scopes = [
        Scope("user"),
        Scope("character", character=rowan.slug),
        Scope("conversation", conversation=str(conv.pk)),
    ]
    for i in range(n):
        message = MessageFactory(conversation=conv, content=f"fact {i}")
        result = memory_assert(
            user=user,
            key=f"fact.n{i}",
            value=f"value {i}",
            scope=scopes[i % 3],
            sources=[str(message.pk)],
            confidence=(1.0, 0.7, 0.3)[i % 3],
        )
        if i % 5 == 0:
            memory_confirm(record_id=result.record.id, user=user)
    memory_forget(
        record_id=memory_assert(
            user=user, key="dog.name", value="Rex", scope=Scope("user")
        ).record.id,
        user=user,
    )


def test_the_memory_list_costs_the_same_for_5_or_200_memories(rowan, django_assert_num_queries):
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


def test_the_history_page_costs_the_same_for_5_or_200_values(rowan, django_assert_num_queries):
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


def test_the_boundaries_page_costs_the_same_for_5_or_200_rules(rowan, django_assert_num_queries):
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


def test_the_forgotten_page_costs_the_same_for_5_or_200_tombstones(
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


def test_the_transcript_and_the_list_cost_the_same_for_5_or_200_messages(
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
