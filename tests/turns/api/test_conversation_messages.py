"""SPEC §10 C4: the runtime reads back every resource it creates — a user, the characters, a
user's conversations, a conversation, its messages, a turn and a tombstone — each strict (an
unknown query parameter is a 400 naming it), 404 `not_found` for an unknown id, lists as §10
lists (`count`, `next`, `previous`, `results`; `limit` 50 by default, at most 500) whose query
count stays flat as data grows."""

import uuid

import pytest
from django.db import connection

from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

LIST_KEYS = {"count", "next", "previous", "results"}


def turn(api, conv, key, content):
    response = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def reply(api, turn_id, content):
    response = api.post(f"/api/v1/turns/{turn_id}/reply", {"content": content}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["message"]


# ---------------------------------------------------------------------------------------------
# Users and characters


def test_c4_a_user_reads_back_as_put_stored_it(api):
    put = api.put("/api/v1/users/sam", {"email": "sam@example.com"}, format="json")
    assert put.status_code == 201
    got = api.get("/api/v1/users/sam")
    assert got.status_code == 200
    assert got.json() == put.json()
    assert set(got.json()) == {"ref", "created_at"} and got.json()["ref"] == "sam"


def test_c4_an_unknown_user_is_a_404_and_an_unknown_parameter_a_400(api, sam):
    assert_problem(api.get("/api/v1/users/nobody"), 404, "not_found")
    assert_problem(api.get("/api/v1/users/sam?verbose=1"), 400, "validation_error", "verbose")


def test_c4_a_character_reads_back_and_an_unknown_slug_is_a_404(api):
    put = api.put("/api/v1/characters/captain-rowan", {"name": "Captain Rowan"}, format="json")
    got = api.get("/api/v1/characters/captain-rowan")
    assert got.status_code == 200 and got.json() == put.json() == {
        "slug": "captain-rowan",
        "name": "Captain Rowan",
    }
    assert_problem(api.get("/api/v1/characters/nobody"), 404, "not_found")
    assert_problem(api.get("/api/v1/characters/captain-rowan?x=1"), 400, "validation_error", "x")


def test_c4_the_characters_are_a_list_by_slug(api):
    for slug in ("wren", "ash", "mole"):
        CharacterFactory(slug=slug, name=slug.title())
    body = api.get("/api/v1/characters").json()
    assert set(body) == LIST_KEYS and body["count"] == 3
    assert [c["slug"] for c in body["results"]] == ["ash", "mole", "wren"]
    page = api.get("/api/v1/characters?limit=2&offset=1").json()
    assert [c["slug"] for c in page["results"]] == ["mole", "wren"]
    assert page["previous"] is not None and page["next"] is None
    assert_problem(api.get("/api/v1/characters?sort=name"), 400, "validation_error", "sort")
    assert_problem(api.get("/api/v1/characters?limit=0"), 400, "validation_error", "limit")


def test_c4_the_character_list_runs_a_flat_number_of_queries(api, django_assert_num_queries):
    CharacterFactory(slug="first")
    with django_assert_num_queries(3):  # token, count, page
        assert api.get("/api/v1/characters").json()["count"] == 1
    for i in range(20):
        CharacterFactory(slug=f"c{i}")
    with django_assert_num_queries(3):
        assert api.get("/api/v1/characters").json()["count"] == 21


# ---------------------------------------------------------------------------------------------
# Conversations


def test_c4_a_conversation_reads_back_with_last_seq(api, sam, rowan):
    created = api.post(
        "/api/v1/conversations",
        {"user": "sam", "character": "captain-rowan", "title": "Night watch"},
        format="json",
    ).json()
    assert created["last_seq"] == 0
    conv_id = created["id"]
    got = api.get(f"/api/v1/conversations/{conv_id}")
    assert got.status_code == 200 and got.json() == created
    assert set(created) == {"id", "user", "character", "title", "created_at", "last_seq"}
    api.post(
        f"/api/v1/conversations/{conv_id}/turns",
        {"turn_key": "t1", "content": "Hi."},
        format="json",
    )
    assert api.get(f"/api/v1/conversations/{conv_id}").json()["last_seq"] == 1
    assert_problem(api.get(f"/api/v1/conversations/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(
        api.get(f"/api/v1/conversations/{conv_id}?full=1"), 400, "validation_error", "full"
    )


def test_c4_a_users_conversations_newest_first_and_by_character(api, sam, rowan, alex):
    wren = CharacterFactory(slug="wren")
    made = [
        api.post("/api/v1/conversations", {"user": "sam", "character": slug}, format="json").json()[
            "id"
        ]
        for slug in ("captain-rowan", "wren", "captain-rowan")
    ]
    ConversationFactory(user=alex, character=wren)
    body = api.get("/api/v1/conversations?user=sam").json()
    assert set(body) == LIST_KEYS and body["count"] == 3
    assert [c["id"] for c in body["results"]] == made[::-1]
    with_rowan = api.get("/api/v1/conversations?user=sam&character=captain-rowan").json()
    assert [c["id"] for c in with_rowan["results"]] == [made[2], made[0]]
    assert_problem(api.get("/api/v1/conversations"), 400, "validation_error", "user")
    assert_problem(api.get("/api/v1/conversations?user=nobody"), 400, "validation_error", "user")
    assert_problem(
        api.get("/api/v1/conversations?user=sam&character=nobody"),
        400,
        "validation_error",
        "character",
    )
    assert_problem(
        api.get("/api/v1/conversations?user=sam&order=old"), 400, "validation_error", "order"
    )


def test_c4_the_conversation_list_runs_a_flat_number_of_queries(
    api, sam, rowan, django_assert_num_queries
):
    ConversationFactory(user=sam, character=rowan)
    with django_assert_num_queries(4):  # token, user, count, page (user and character joined)
        assert api.get("/api/v1/conversations?user=sam").json()["count"] == 1
    for _ in range(15):
        ConversationFactory(user=sam, character=CharacterFactory())
    with django_assert_num_queries(4):
        assert api.get("/api/v1/conversations?user=sam").json()["count"] == 16


# ---------------------------------------------------------------------------------------------
# Messages


def test_c4_messages_oldest_first_each_with_its_turn_and_withheld(api, conv):
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


def test_c4_messages_by_after_seq_and_before_seq(api, conv):
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


def test_c4_a_message_page_is_at_most_500_and_50_by_default(api, conv):
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


def test_c4_the_message_list_runs_a_flat_number_of_queries(api, conv, django_assert_num_queries):
    turn(api, conv, "t1", "Hello there.")
    url = f"/api/v1/conversations/{conv.pk}/messages"
    with django_assert_num_queries(4):  # token, conversation with user, count, page
        assert api.get(url).json()["count"] == 1
    for i in range(2, 12):
        made = turn(api, conv, f"t{i}", f"Message {i}.")
        reply(api, made["id"], f"Answer {i}.")
    with django_assert_num_queries(4):
        assert api.get(url).json()["count"] == 21


# ---------------------------------------------------------------------------------------------
# Turns


def test_c4_a_turn_reads_back_with_its_reply_and_never_a_plan(api, conv):
    created = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": "t1", "content": "My cat's name is Miso.", "plan": {"budget": 500}},
        format="json",
    ).json()
    got = api.get(f"/api/v1/turns/{created['id']}").json()
    assert "plan" not in got and got["reply"] is None and got["status"] == "open"
    for name in (
        "id",
        "conversation",
        "turn_key",
        "scene",
        "status",
        "user_message",
        "extracted",
        "learning",
    ):
        assert got[name] == created[name], name
    assert set(got) == {
        "id",
        "conversation",
        "turn_key",
        "scene",
        "status",
        "user_message",
        "extracted",
        "learning",
        "created_at",
        "reply",
    }
    answer = reply(api, created["id"], "Miso is a lovely name.")
    replied = api.get(f"/api/v1/turns/{created['id']}").json()
    assert replied["status"] == "replied"
    assert replied["reply"] == {**answer, "turn": created["id"], "withheld": False}


def test_c4_a_turns_extracted_memory_is_shown_as_it_is_now_never_a_forgotten_value(api, conv):
    """E1/F2: after a forget the turn's extracted memory shows state `forgotten` and no value."""
    created = turn(api, conv, "t1", "My cat's name is Miso.")
    [extracted] = created["extracted"]
    assert extracted["memory"]["value"] == "Miso"
    forgot = api.post(f"/api/v1/memories/{extracted['memory']['id']}/forget", {}, format="json")
    assert forgot.status_code == 200
    got = api.get(f"/api/v1/turns/{created['id']}").json()
    memory = got["extracted"][0]["memory"]
    assert memory["state"] == "forgotten" and memory["value"] == ""
    assert "Miso" not in str(got)


def test_c4_an_unknown_turn_is_a_404(api, conv):
    assert_problem(api.get(f"/api/v1/turns/{uuid.uuid4()}"), 404, "not_found")
    made = turn(api, conv, "t1", "Hi.")
    assert_problem(api.get(f"/api/v1/turns/{made['id']}?plan=1"), 400, "validation_error", "plan")


def test_c4_a_turn_read_runs_a_flat_number_of_queries(api, conv, django_assert_num_queries):
    """Token, the turn with its conversation, user and messages, the database clock (a query
    on PostgreSQL only), and the E1 read of its extracted memories: their scoped keys' records and the tombstones of their
    keys (the registry and the secret come from the catalog cache)."""
    made = turn(api, conv, "t1", "My cat's name is Miso. I live in Oslo.")
    reply(api, made["id"], "Noted.")
    clock = 1 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(4 + clock):
        api.get(f"/api/v1/turns/{made['id']}")
    for i in range(2, 8):
        turn(api, conv, f"t{i}", f"My dog number {i} is called Rex{i}. I live in Oslo{i}.")
    with django_assert_num_queries(4 + clock):
        assert len(api.get(f"/api/v1/turns/{made['id']}").json()["extracted"]) == 2


# ---------------------------------------------------------------------------------------------
# Tombstones (C4 read, C5 scope)


def test_c4_c5_a_tombstone_reads_back_with_its_scope_as_an_object(api, conv):
    created = turn(api, conv, "t1", "My cat's name is Miso.")
    memory_id = created["extracted"][0]["memory"]["id"]
    forgot = api.post(f"/api/v1/memories/{memory_id}/forget", {}, format="json").json()
    assert forgot["scope"] == {"kind": "user"} and forgot["scope_id"] == "user:sam"
    got = api.get(f"/api/v1/tombstones/{forgot['id']}")
    assert got.status_code == 200 and got.json() == forgot
    listed = api.get("/api/v1/tombstones?user=sam").json()["results"]
    assert listed == [forgot]
    assert_problem(api.get(f"/api/v1/tombstones/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(api.get(f"/api/v1/tombstones/{forgot['id']}?x=1"), 400, "validation_error", "x")


def test_c5_a_forget_everywhere_has_the_everywhere_scope(api, conv):
    created = turn(api, conv, "t1", "My cat's name is Miso.")
    memory_id = created["extracted"][0]["memory"]["id"]
    forgot = api.post(
        f"/api/v1/memories/{memory_id}/forget", {"everywhere": True}, format="json"
    ).json()
    assert forgot["scope"] == {"kind": "everywhere"} and forgot["scope_id"] == "*"


def test_c5_every_scope_kind_of_a_tombstone_has_the_memory_scope_shape(api, conv):
    """A forget in each kind of scope answers the scope the memory showed."""
    scopes = [
        {"kind": "character", "character": "captain-rowan"},
        {"kind": "conversation", "conversation": str(conv.pk)},
        {"kind": "scene", "conversation": str(conv.pk), "scene": "deck:2"},
    ]
    for i, scope in enumerate(scopes):
        made = api.post(
            "/api/v1/memories",
            {"user": "sam", "key": f"thing{i}.name", "value": "x", "scope": scope},
            format="json",
        ).json()
        assert made["memory"]["scope"] == scope
        forgot = api.post(
            f"/api/v1/memories/{made['memory']['id']}/forget", {}, format="json"
        ).json()
        assert forgot["scope"] == scope


def test_c4_the_tombstone_read_runs_two_queries(api, sam, django_assert_num_queries):
    from memory.models import Tombstone

    tombstone = Tombstone.objects.create(
        user=sam,
        scope_id="*",
        key="pet.name",
        forgotten_at=sam.date_joined,
        blocks_sources_before=sam.date_joined,
    )
    with django_assert_num_queries(2):  # token, tombstone with its user
        assert api.get(f"/api/v1/tombstones/{tombstone.pk}").status_code == 200


def test_the_reads_are_for_any_user_of_the_deployment(api, alex_conv):
    """§10: a token acts for every user; the reads answer another user's data by id too."""
    UserFactory(username="ash")
    assert api.get(f"/api/v1/conversations/{alex_conv.pk}").json()["user"] == "alex"
    assert api.get("/api/v1/users/ash").status_code == 200
