"""`POST /conversations` `{user, character, title?}` (SPEC §10): 201 with the conversation, its
id the one turns are created under; an unknown user or character is a 400 naming the field and
stores nothing."""

import pytest

from conversations.models import Conversation
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

KEYS = {"id", "user", "character", "title", "created_at", "last_seq"}


def test_it_starts_a_conversation_with_201(api, sam, rowan):
    body = {"user": "sam", "character": "captain-rowan", "title": "Rooftop greenhouse"}
    r = api.post("/api/v1/conversations", body, format="json")
    assert r.status_code == 201
    made = r.json()
    assert set(made) == KEYS
    assert (made["user"], made["character"], made["title"], made["last_seq"]) == (
        "sam",
        "captain-rowan",
        "Rooftop greenhouse",
        0,
    )
    assert made["created_at"].endswith("Z")
    assert api.get(f"/api/v1/conversations/{made['id']}").json() == made


def test_it_gives_a_conversation_without_a_title_an_empty_one(api, sam, rowan):
    r = api.post("/api/v1/conversations", {"user": "sam", "character": rowan.slug}, format="json")
    assert r.status_code == 201 and r.json()["title"] == ""


def test_it_starts_a_new_conversation_each_time(api, sam, rowan):
    body = {"user": "sam", "character": "captain-rowan"}
    first = api.post("/api/v1/conversations", body, format="json").json()
    second = api.post("/api/v1/conversations", body, format="json").json()
    assert first["id"] != second["id"]
    assert Conversation.objects.filter(user=sam).count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user": "nobody", "character": "captain-rowan"}, "user"),
        ({"user": "sam", "character": "nobody"}, "character"),
        ({"character": "captain-rowan"}, "user"),
        ({"user": "sam"}, "character"),
        ({"user": "sam", "character": "captain-rowan", "mood": "calm"}, "mood"),
    ],
)
def test_it_refuses_bad_input_with_a_400_naming_the_field_and_stores_nothing(
    api, sam, rowan, body, field
):
    r = api.post("/api/v1/conversations", body, format="json")
    assert_problem(r, 400, "validation_error", field)
    assert not Conversation.objects.exists()
