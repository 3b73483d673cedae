"""`PUT /characters/{slug}` `{name}` (SPEC §10): create a character by its slug (201) or rename
it (200); a missing name or a bad slug is a 400 naming the field and stores nothing."""

import pytest

from conversations.models import Character
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_creates_a_character_with_201(api):
    r = api.put("/api/v1/characters/captain-rowan", {"name": "Captain Rowan"}, format="json")
    assert r.status_code == 201
    assert r.json() == {"slug": "captain-rowan", "name": "Captain Rowan"}
    assert Character.objects.get(slug="captain-rowan").name == "Captain Rowan"


def test_it_renames_an_existing_character_with_200(api):
    api.put("/api/v1/characters/captain-rowan", {"name": "Captain Rowan"}, format="json")
    r = api.put("/api/v1/characters/captain-rowan", {"name": "Admiral Rowan"}, format="json")
    assert r.status_code == 200
    assert r.json() == {"slug": "captain-rowan", "name": "Admiral Rowan"}
    assert Character.objects.filter(slug="captain-rowan").count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "name"), ({"name": ""}, "name"), ({"name": "Rowan", "mood": "calm"}, "mood")],
)
def test_it_refuses_bad_input_with_a_400_naming_the_field_and_stores_nothing(api, body, field):
    r = api.put("/api/v1/characters/captain-rowan", body, format="json")
    assert_problem(r, 400, "validation_error", field)
    assert not Character.objects.filter(slug="captain-rowan").exists()


def test_it_refuses_a_slug_that_is_not_a_slug_with_a_400(api):
    r = api.put("/api/v1/characters/not a slug!", {"name": "Rowan"}, format="json")
    assert_problem(r, 400, "validation_error", "slug")
    assert not Character.objects.exists()
