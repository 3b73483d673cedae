"""`GET /characters/{slug}` (SPEC §10 C4): a character reads back; an unknown slug is a 404."""

import pytest

from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_reads_a_character_back_and_answers_404_to_an_unknown_slug_c4(api):
    put = api.put("/api/v1/characters/captain-rowan", {"name": "Captain Rowan"}, format="json")
    got = api.get("/api/v1/characters/captain-rowan")
    assert got.status_code == 200 and got.json() == put.json() == {
        "slug": "captain-rowan",
        "name": "Captain Rowan",
    }
    assert_problem(api.get("/api/v1/characters/nobody"), 404, "not_found")
    assert_problem(api.get("/api/v1/characters/captain-rowan?x=1"), 400, "validation_error", "x")
