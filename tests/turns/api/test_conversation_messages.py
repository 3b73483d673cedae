"""`GET /conversations/{id}/messages` (SPEC §10 C4): oldest first, each with its turn and
withheld flag, by `after_seq` and `before_seq`, at most 500 and 50 by default, in a flat number
of queries. The other reads (users, characters, conversations, turns, tombstones) have a file
each, named after their operation."""

import uuid

import pytest

from tests.helpers import assert_problem
from tests.turns.api.reads import LIST_KEYS, reply, turn

pytestmark = pytest.mark.django_db


def test_it_lists_messages_oldest_first_each_with_its_turn_and_withheld_c4(api, conv):
    """Each message `{id, seq, role, content, created_at, turn, withheld}`; a plain message is
    not withheld (F6 marks the withheld ones)."""
    first = turn(api, conv, "t1", "My cat's name is Miso.")
    answer = reply(api, first["id"], "Miso is a lovely name.")
    second = turn(api, conv, "t2", "I live in Oslo.")
    body = api.get(f"/api/v1/conversations/{conv.pk}/messages").json()
    assert set(body) == LIST_KEYS and body["count"] == 3
    rows = body["results"]
    assert [(m["seq"], m["role"], m["content"], m["turn"], m["withheld"]) for m in rows] == [
        (1, "user", "My cat's name is Miso.", first["id"], False),
        (2, "assistant", "Miso is a lovely name.", first["id"], False),
        (3, "user", "I live in Oslo.", second["id"], False),
    ]
    assert set(rows[0]) == {"id", "seq", "role", "content", "created_at", "turn", "withheld"}
    assert rows[0]["id"] == first["user_message"]["id"] and rows[1]["id"] == answer["id"]
    assert rows[1]["created_at"] == answer["created_at"]


def test_it_pages_messages_by_after_seq_and_before_seq_c4(api, conv):
    for i in range(1, 8):
        turn(api, conv, f"t{i}", f"Message number {i}.")

    def seqs(q):
        return [
            m["seq"]
            for m in api.get(f"/api/v1/conversations/{conv.pk}/messages{q}").json()["results"]
        ]

    assert seqs("?after_seq=4") == [5, 6, 7]
    assert seqs("?before_seq=3") == [1, 2]
    assert seqs("?after_seq=2&before_seq=6") == [3, 4, 5]
    # The last N: after last_seq - N (the conversation's read says last_seq).
    last_seq = api.get(f"/api/v1/conversations/{conv.pk}").json()["last_seq"]
    assert seqs(f"?after_seq={last_seq - 2}") == [6, 7]
    assert seqs("?limit=2&offset=1") == [2, 3]
    assert_problem(
        api.get(f"/api/v1/conversations/{conv.pk}/messages?after_seq=-1"),
        400,
        "validation_error",
        "after_seq",
    )
    assert_problem(
        api.get(f"/api/v1/conversations/{conv.pk}/messages?since=1"),
        400,
        "validation_error",
        "since",
    )
    assert_problem(api.get(f"/api/v1/conversations/{uuid.uuid4()}/messages"), 404, "not_found")


def test_it_pages_messages_50_by_default_and_at_most_500_c4(api, conv):
    from conversations.models import Message

    Message.objects.bulk_create(
        Message(
            user=conv.user,
            conversation=conv,
            seq=i,
            role="user",
            content=f"m{i}",
            created_at=conv.created_at,
        )
        for i in range(1, 502)
    )
    default = api.get(f"/api/v1/conversations/{conv.pk}/messages").json()
    assert default["count"] == 501 and len(default["results"]) == 50
    largest = api.get(f"/api/v1/conversations/{conv.pk}/messages?limit=1000").json()
    assert len(largest["results"]) == 500


def test_it_lists_messages_in_a_flat_number_of_queries_c4(api, conv, django_assert_num_queries):
    turn(api, conv, "t1", "Hello there.")
    url = f"/api/v1/conversations/{conv.pk}/messages"
    with django_assert_num_queries(4):  # token, conversation with user, count, page
        assert api.get(url).json()["count"] == 1
    for i in range(2, 12):
        made = turn(api, conv, f"t{i}", f"Message {i}.")
        reply(api, made["id"], f"Answer {i}.")
    with django_assert_num_queries(4):
        assert api.get(url).json()["count"] == 21


def test_it_answers_a_withheld_message_with_content_null_f7_5(api, sam, conv, client):
    """F7.5: after a forget, each withheld message comes back with `content: null` and
    `withheld: true`, so a runtime rebuilding its context from this read cannot resend the
    word; the others keep their text. The user's own transcript page and export keep every
    word (F6)."""
    from memory.forgetting import forget_key

    first = turn(api, conv, "t1", "My cat's name is Miso.")
    reply(api, first["id"], "Miso is a lovely name.")
    turn(api, conv, "t2", "I live in Oslo.")
    forget_key(user=sam, key="cat.name", scope_id="*")
    rows = api.get(f"/api/v1/conversations/{conv.pk}/messages").json()["results"]
    assert [(m["seq"], m["content"], m["withheld"]) for m in rows] == [
        (1, None, True),
        (2, None, True),
        (3, "I live in Oslo.", False),
    ]
    exported = api.get(f"/api/v1/users/{sam.username}/export").json()["messages"]
    assert sorted((m["content"], m["withheld"]) for m in exported) == [
        ("I live in Oslo.", False),
        ("Miso is a lovely name.", True),
        ("My cat's name is Miso.", True),
    ]
    client.force_login(sam)
    page = client.get(f"/conversations/{conv.pk}/").content.decode()
    assert "My cat&#x27;s name is Miso." in page and "Miso is a lovely name." in page
