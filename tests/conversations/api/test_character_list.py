"""`GET /characters` (SPEC §10 C4): a §10 list by slug, in a flat number of queries."""

import pytest

from tests.factories import CharacterFactory
from tests.helpers import assert_problem
from tests.turns.api.reads import LIST_KEYS

pytestmark = pytest.mark.django_db


def test_it_lists_the_characters_by_slug_c4(api):
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


def test_it_lists_characters_in_a_flat_number_of_queries_c4(api, django_assert_num_queries):
    CharacterFactory(slug="first")
    with django_assert_num_queries(3):  # token, count, page
        assert api.get("/api/v1/characters").json()["count"] == 1
    for i in range(20):
        CharacterFactory(slug=f"c{i}")
    with django_assert_num_queries(3):
        assert api.get("/api/v1/characters").json()["count"] == 21
