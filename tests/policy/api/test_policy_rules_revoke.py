"""`POST /policy/rules/{id}/revoke` (SPEC D5, D7, §10): the rule comes back with `revoked_at` and
the version moves; an unknown rule is 404, unknown fields are refused."""

import uuid

import pytest

from tests.helpers import assert_problem
from tests.policy.api.calls import (
    create_rule,
    decide,
)

pytestmark = pytest.mark.django_db


def test_it_returns_a_revoked_rule_with_revoked_at_and_bumps_the_version_d5_d7(api, ctx):
    rule = create_rule(api).json()
    response = api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {}, format="json")
    assert response.status_code == 200
    revoked = response.json()
    assert revoked["revoked_at"] is not None and revoked["revoked_at"].endswith("Z")
    body = decide(api, ctx).json()
    assert (body["effect"], body["reason"], body["policy_version"]["user"]) == (
        "ask",
        "no-applicable-rule",
        2,
    )
    again = api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {}, format="json")
    assert again.status_code == 200 and again.json()["revoked_at"] == revoked["revoked_at"]


def test_it_answers_404_to_revoking_an_unknown_rule(api, capabilities):
    assert_problem(
        api.post(f"/api/v1/policy/rules/{uuid.uuid4()}/revoke", {}, format="json"), 404, "not_found"
    )
    assert_problem(
        api.post("/api/v1/policy/rules/not-a-uuid/revoke", {}, format="json"), 404, "not_found"
    )


def test_it_refuses_unknown_fields_on_revoke(api, ctx):
    rule = create_rule(api).json()
    assert_problem(
        api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {"at": "now"}, format="json"),
        400,
        "validation_error",
        "at",
    )
