"""`POST /memory/remember` `{context, text, source?}` (SPEC §8, §10): the facts a text states
about the user are asserted in the user scope with authority `rule-extracted`, as a turn does
with the user's message; a text with no fact extracts nothing. A missing context or an unknown
user is a 400 naming the field and stores nothing."""

import pytest

from memory.models import MemoryRecord
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def remember(api, body):
    return api.post("/api/v1/memory/remember", body, format="json")


def test_it_asserts_the_facts_of_a_text_in_the_user_scope(api, ctx):
    r = remember(api, {"context": ctx, "text": "My dog's name is Rex."})
    assert r.status_code == 200
    [found] = r.json()["extracted"]
    assert found["outcome"] == "created"
    memory = found["memory"]
    assert (memory["value"], memory["scope"], memory["authority"], memory["state"]) == (
        "Rex",
        {"kind": "user"},
        "rule-extracted",
        "active",
    )
    assert api.get(f"/api/v1/memories/{memory['id']}").json() == memory


def test_it_extracts_nothing_from_a_text_without_a_fact(api, ctx):
    r = remember(api, {"context": ctx, "text": "What a lovely morning."})
    assert r.status_code == 200 and r.json() == {"extracted": []}
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"context": None}, "context"),
        ({"text": None}, "text"),
        ({"source": "not-a-uuid"}, "source"),
        ({"tone": 1}, "tone"),
    ],
)
def test_it_refuses_bad_input_with_a_400_naming_the_field_and_stores_nothing(
    api, ctx, change, field
):
    body = {"context": ctx, "text": "My dog's name is Rex."}
    body.update(change)
    body = {k: v for k, v in body.items() if v is not None}
    assert_problem(remember(api, body), 400, "validation_error", field)
    assert not MemoryRecord.objects.exists()


def test_it_refuses_a_context_of_an_unknown_user_with_a_400(api, ctx):
    body = {"context": {**ctx, "user": "nobody"}, "text": "My dog's name is Rex."}
    assert_problem(remember(api, body), 400, "validation_error", "context.user")
    assert not MemoryRecord.objects.exists()
