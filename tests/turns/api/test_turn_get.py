"""`GET /turns/{id}` (SPEC §10 C4): a turn reads back with its reply and never a plan, its
extracted memory as it is now, 404 for an unknown turn, in a flat number of queries."""

import uuid

import pytest
from django.db import connection

from tests.helpers import assert_problem
from tests.turns.api.reads import reply, turn

pytestmark = pytest.mark.django_db


def test_it_reads_a_turn_back_with_its_reply_and_never_a_plan_c4(api, conv):
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


def test_it_shows_a_turns_extracted_memory_as_it_is_now_never_a_forgotten_value_c4(api, conv):
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


def test_it_answers_404_to_an_unknown_turn_c4(api, conv):
    assert_problem(api.get(f"/api/v1/turns/{uuid.uuid4()}"), 404, "not_found")
    made = turn(api, conv, "t1", "Hi.")
    assert_problem(api.get(f"/api/v1/turns/{made['id']}?plan=1"), 400, "validation_error", "plan")


def test_it_reads_a_turn_in_a_flat_number_of_queries_c4(api, conv, django_assert_num_queries):
    """Token, the turn with its conversation, user and messages, the database clock (a query
    on PostgreSQL only), and the E1 read of its extracted memories: their scoped keys' records
    and the tombstones of their keys (the registry and the secret come from the catalog
    cache)."""
    made = turn(api, conv, "t1", "My cat's name is Miso. I live in Oslo.")
    reply(api, made["id"], "Noted.")
    clock = 1 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(4 + clock):
        api.get(f"/api/v1/turns/{made['id']}")
    for i in range(2, 8):
        turn(api, conv, f"t{i}", f"My dog number {i} is called Rex{i}. I live in Oslo{i}.")
    with django_assert_num_queries(4 + clock):
        assert len(api.get(f"/api/v1/turns/{made['id']}").json()["extracted"]) == 2


def test_it_masks_an_extracted_memory_a_forget_withholds_f7_2(api, sam, conv):
    """F7.2: a turn read back shows the memory it taught masked while a forget withholds it
    (value null, the key's free part masked), so a runtime rebuilding its context from reads
    meets neither the name nor the employer."""
    from tests.memory.api.calls import forget

    named = turn(api, conv, "t1", "My sister is called Priya.")
    taught = turn(api, conv, "t2", "My friend Priya works at Globex.")
    [works] = taught["extracted"]
    forget(api, named["extracted"][0]["memory"]["id"])
    body = api.get(f"/api/v1/turns/{taught['id']}").json()
    [shown] = body["extracted"]
    assert shown["memory"]["id"] == works["memory"]["id"]
    assert (shown["memory"]["key"], shown["memory"]["value"]) == ("people.*.works_at", None)


def test_it_reads_a_withheld_reply_back_with_content_null_f7_5(api, sam, conv):
    """F7.5: a turn's reply that a forget withholds (it mentions the forgotten value) is read
    back with `withheld: true` and `content: null`; its id, seq and role stay."""
    from memory.forgetting import forget_key

    created = turn(api, conv, "t1", "My cat's name is Miso.")
    answer = reply(api, created["id"], "Miso is a lovely name.")
    forget_key(user=sam, key="cat.name", scope_id="*")
    got = api.get(f"/api/v1/turns/{created['id']}").json()["reply"]
    assert got == {
        **answer,
        "content": None,
        "withheld": True,
        "turn": created["id"],
    }
