"""`GET /users/{user}` (SPEC §10 C4): a user reads back as `PUT` stored it; an unknown user is a
404 and an unknown parameter a 400. A token reads every user of the deployment."""

import pytest

from tests.factories import UserFactory
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_reads_a_user_back_as_put_stored_it_c4(api):
    put = api.put("/api/v1/users/sam", {"email": "sam@example.com"}, format="json")
    assert put.status_code == 201
    got = api.get("/api/v1/users/sam")
    assert got.status_code == 200
    assert got.json() == put.json()
    assert set(got.json()) == {"ref", "created_at"} and got.json()["ref"] == "sam"


def test_it_answers_404_to_an_unknown_user_and_400_to_an_unknown_parameter_c4(api, sam):
    assert_problem(api.get("/api/v1/users/nobody"), 404, "not_found")
    assert_problem(api.get("/api/v1/users/sam?verbose=1"), 400, "validation_error", "verbose")


def test_it_reads_for_any_user_of_the_deployment(api, alex_conv):
    """§10: a token acts for every user; the reads answer another user's data by id too."""
    UserFactory(username="ash")
    assert api.get(f"/api/v1/conversations/{alex_conv.pk}").json()["user"] == "alex"
    assert api.get("/api/v1/users/ash").status_code == 200
