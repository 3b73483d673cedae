"""`GET /policy/capabilities` (SPEC §6, §10): the seeded capabilities with their questions,
for a runtime token only."""

import pytest

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
