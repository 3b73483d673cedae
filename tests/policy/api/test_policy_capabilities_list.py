"""`GET /policy/capabilities` (SPEC §6, §10): the seeded capabilities with their questions,
for a runtime token only."""

import pytest

from policy.models import Capability
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_lists_the_five_seeded_capabilities_with_their_questions(api, capabilities):
    body = api.get("/api/v1/policy/capabilities").json()
    assert body["count"] == 5
    names = [item["name"] for item in body["results"]]
    assert names == sorted(
        ["tone.playful", "topic.work", "relationship.advance", "media.voice", "media.image"]
    )
    assert all(item["question"] for item in body["results"])


def test_it_refuses_a_request_without_a_token(client, capabilities):
    assert_problem(client.get("/api/v1/policy/capabilities"), 401, "unauthenticated")


def test_it_lists_2_or_20_capabilities_in_the_same_three_queries(
    api, capabilities, django_assert_num_queries
):
    """SPEC §10 (DESIGN habit 6): the list costs as many queries for 20 capabilities as for 2
    (the catalog here is this test's: its rows come back with the test's rollback)."""
    Capability.objects.exclude(name__in=["media.voice", "tone.playful"]).delete()
    with django_assert_num_queries(3):  # token, count, page
        few = api.get("/api/v1/policy/capabilities").json()
    Capability.objects.bulk_create(
        Capability(name=f"test.extra{i:02}", question=f"May I {i}?") for i in range(18)
    )
    with django_assert_num_queries(3):
        many = api.get("/api/v1/policy/capabilities").json()
    assert [item["name"] for item in few["results"]] == ["media.voice", "tone.playful"]
    assert (few["count"], many["count"], len(many["results"])) == (2, 20, 20)
