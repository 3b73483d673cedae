"""`GET /policy/rules` (SPEC §6, §10): a user's rules or the product defaults, in a constant
number of queries."""

import pytest

from tests.factories import UserFactory
from tests.helpers import assert_problem
from tests.policy.api.calls import create_rule

pytestmark = pytest.mark.django_db


def test_it_lists_a_users_rules_or_the_product_defaults(api, ctx):
    mine = create_rule(api).json()
    create_rule(api, user=None, source="product-default", effect="deny")
    create_rule(api, user=UserFactory(username="ash").username)
    body = api.get("/api/v1/policy/rules?user=wren").json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert [r["id"] for r in body["results"]] == [mine["id"]]
    defaults = api.get("/api/v1/policy/rules").json()["results"]
    assert [(r["user"], r["effect"]) for r in defaults] == [(None, "deny")]
    assert api.get("/api/v1/policy/rules?user=wren&capability=tone.playful").json()["count"] == 0
    assert_problem(api.get("/api/v1/policy/rules?user=nobody"), 400, "validation_error", "user")
    assert_problem(
        api.get("/api/v1/policy/rules?capability=x"), 400, "validation_error", "capability"
    )


def test_it_lists_rules_in_a_constant_number_of_queries(api, ctx, django_assert_num_queries):
    create_rule(api)
    with django_assert_num_queries(4):  # token, user, count, page
        api.get("/api/v1/policy/rules?user=wren")
    for _ in range(5):
        create_rule(api)
    with django_assert_num_queries(4):
        assert api.get("/api/v1/policy/rules?user=wren").json()["count"] == 6
