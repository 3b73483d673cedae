"""The worlds and counts of the pages' constant-query tests (DESIGN habit 6): a person with a
signed-in client, n memories of every shape the pages show, and the query count of a page."""

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.scopes import Scope
from memory.forgetting import memory_forget
from memory.services import memory_assert, memory_confirm
from tests.factories import ConversationFactory, MessageFactory, UserFactory

SMALL, LARGE = 5, 200


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
