"""`GET /conversations` (SPEC §10 C4): a user's conversations newest first, by character, in a
flat number of queries."""

import pytest

from tests.factories import CharacterFactory, ConversationFactory
from tests.helpers import assert_problem
from tests.turns.api.reads import LIST_KEYS

pytestmark = pytest.mark.django_db


def test_it_lists_a_users_conversations_newest_first_and_by_character_c4(api, sam, rowan, alex):
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


def test_it_lists_conversations_in_a_flat_number_of_queries_c4(
    api, sam, rowan, django_assert_num_queries
):
    ConversationFactory(user=sam, character=rowan)
    with django_assert_num_queries(4):  # token, user, count, page (user and character joined)
        assert api.get("/api/v1/conversations?user=sam").json()["count"] == 1
    for _ in range(15):
        ConversationFactory(user=sam, character=CharacterFactory())
    with django_assert_num_queries(4):
        assert api.get("/api/v1/conversations?user=sam").json()["count"] == 16
