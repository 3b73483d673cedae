"""`PUT /users/{user}` (SPEC §10): create or update a user by its ref — 201 when it was
created, 200 when it existed, safe to call again; bad input is a 400 naming the field and
stores nothing."""

import pytest
from django.contrib.auth import get_user_model

from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_creates_a_user_with_201_and_answers_its_ref_and_creation_time(api):
    r = api.put("/api/v1/users/sam", {"email": "sam@example.com"}, format="json")
    assert r.status_code == 201
    assert set(r.json()) == {"ref", "created_at"} and r.json()["ref"] == "sam"
    assert r.json()["created_at"].endswith("Z")
    assert get_user_model().objects.get(username="sam").email == "sam@example.com"


def test_it_answers_200_with_the_same_user_when_the_ref_exists(api):
    created = api.put("/api/v1/users/sam", {"email": "sam@example.com"}, format="json").json()
    again = api.put("/api/v1/users/sam", {"email": "sam@example.com"}, format="json")
    assert again.status_code == 200 and again.json() == created
    assert get_user_model().objects.filter(username="sam").count() == 1


def test_it_gives_a_new_user_the_memory_profile_memory_registered_for(api):
    """conversations.dependents: the writer below memory runs memory's hook, so the user's
    memory settings (I8) exist from the first `PUT`."""
    from memory.models import MemoryProfile

    api.put("/api/v1/users/sam", {}, format="json")
    assert MemoryProfile.objects.filter(user__username="sam").count() == 1


def test_it_creates_a_user_without_a_body(api):
    assert api.put("/api/v1/users/sam", {}, format="json").status_code == 201
    assert api.put("/api/v1/users/sam", {}, format="json").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [({"email": "not-an-email"}, "email"), ({"name": "Sam"}, "name")],
)
def test_it_refuses_bad_input_with_a_400_naming_the_field_and_stores_nothing(api, body, field):
    assert_problem(
        api.put("/api/v1/users/sam", body, format="json"), 400, "validation_error", field
    )
    assert not get_user_model().objects.filter(username="sam").exists()
