"""`POST /memories` (SPEC §2, §10), through HTTP with a runtime token: a memory with every
field, bad input, credentials, `unchanged` and replays, authority conflicts."""

import pytest

from memory.models import MemoryRecord
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory, learn

pytestmark = pytest.mark.django_db

MEMORY_FIELDS = {
    "id",
    "user",
    "key",
    "value",
    "scope",
    "state",
    "state_detail",
    "status",
    "status_since",
    "authority",
    "confidence",
    "valid_from",
    "valid_until",
    "retracted_at",
    "recorded_at",
    "evidence_time",
    "sources",
    "supersedes",
    "version",
}


def test_it_creates_a_memory_with_every_field(api, sam):
    """§10: 201 with outcome `created` and the memory shape; times in RFC 3339 with Z."""
    r = assert_memory(
        api, user="sam", key="pet.name", value="Rex", valid_from="2026-08-05T12:00:00Z"
    )
    assert r.status_code == 201
    body = r.json()
    assert body["outcome"] == "created"
    assert set(body["memory"]) == MEMORY_FIELDS
    assert body["memory"]["valid_from"] == "2026-08-05T12:00:00Z"
    assert body["memory"]["recorded_at"].endswith("Z")
    assert body["memory"]["scope"] == {"kind": "user"}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"key": "Bad Key!"}, "key"),
        ({"value": ""}, "value"),
        ({"confidence": 2}, "confidence"),
        ({"confidence": "high"}, "confidence"),
        ({"scope": {"kind": "galaxy"}}, "scope.kind"),
        ({"scope": {"kind": "character"}}, "scope.character"),
        ({"scope": {"kind": "user", "character": "x"}}, "scope.character"),
        ({"scope": {"kind": "conversation", "conversation": "not-a-uuid"}}, "scope.conversation"),
        ({"valid_from": "yesterday"}, "valid_from"),
        (
            {"valid_from": "2026-08-02T00:00:00Z", "valid_until": "2026-08-01T00:00:00Z"},
            "valid_until",
        ),
        ({"sources": ["not-a-uuid"]}, "sources.0"),
        ({"user": "nobody"}, "user"),
        ({"colour": "blue"}, "colour"),
        ({"value": "nul\x00byte"}, "value"),
        ({"authority": "boss"}, "authority"),
    ],
)
def test_it_answers_bad_input_with_a_problem_naming_the_field(api, sam, patch, field):
    """W1 / §10: 400 validation_error naming the field; nothing stored."""
    body = {"user": "sam", "key": "pet.name", "value": "Rex", **patch}
    r = assert_memory(api, **body)
    errors = assert_problem(r, 400, "validation_error")["errors"]
    assert field in errors, errors
    assert MemoryRecord.objects.count() == 0


def test_it_refuses_malformed_json(api, sam):
    r = api.post("/api/v1/memories", data=b"{not json", content_type="application/json")
    assert_problem(r, 400, "validation_error")


def test_it_refuses_a_missing_or_revoked_token(client, api_token, sam):
    """§10: the API needs a Bearer token; a session never gets in."""
    assert_problem(client.get("/api/v1/memories?user=sam"), 401, "unauthenticated")
    from django.utils import timezone

    from config.models import ApiToken

    ApiToken.objects.update(revoked_at=timezone.now())
    r = client.get("/api/v1/memories?user=sam", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert_problem(r, 401, "unauthenticated")


def test_it_does_not_accept_a_session(client, sam):
    """§10: pages use sessions; the API never accepts one."""
    sam.is_staff = sam.is_superuser = True
    sam.save()
    client.force_login(sam)
    assert_problem(client.get("/api/v1/memories?user=sam"), 401, "unauthenticated")


def test_it_answers_unchanged_and_replayed_with_200(api, sam):
    """W2/W5 outcomes are 200."""
    first = assert_memory(
        api, user="sam", key="story.lantern.status", value="unlit", idempotency_key="a"
    )
    assert first.status_code == 201
    again = assert_memory(
        api, user="sam", key="story.lantern.status", value="unlit", idempotency_key="a"
    )
    assert (again.status_code, again.json()["outcome"]) == (200, "replayed")
    same = assert_memory(api, user="sam", key="story.lantern.status", value="Unlit")
    assert (same.status_code, same.json()["outcome"]) == (200, "unchanged")
    reused = assert_memory(
        api, user="sam", key="story.lantern.status", value="lit", idempotency_key="a"
    )
    assert_problem(reused, 409, "idempotency_key_reused")


def test_it_answers_an_authority_conflict_with_409(api, sam):
    """W6: explicit supersedes over a higher authority → 409 authority_conflict."""
    corrected = assert_memory(
        api, user="sam", key="pet.name", value="Max", authority="user-corrected"
    ).json()
    r = assert_memory(
        api, user="sam", key="pet.name", value="Rex", supersedes=corrected["memory"]["id"]
    )
    assert_problem(r, 409, "authority_conflict")


def test_it_answers_a_write_with_the_new_records_state_e1(api, sam):
    future = learn(api, key="trip.city", value="Lisbon", valid_from="2099-01-01T00:00:00Z").json()
    assert future["memory"]["state"] == "not-yet-valid"
    assert future["memory"]["state_detail"]["rule"] == "R3"
    mine = learn(api, key="pet.name", value="Rex", authority="user-corrected").json()["memory"]
    weaker = learn(
        api, key="pet.name", value="Max", authority="model-inferred", valid_from=None
    ).json()["memory"]
    assert weaker["state"] == "lower-precedence"  # W7
    assert weaker["state_detail"]["by"] == mine["id"] and weaker["state_detail"]["rule"] == "R6"


def test_it_answers_a_replayed_assert_with_the_state_now_e1(api, sam):
    body = {"key": "pet.name", "value": "Rex", "valid_from": None, "idempotency_key": "k1"}
    first = learn(api, **body).json()["memory"]
    learn(api, key="pet.name", value="Max", valid_from=None)
    replayed = learn(api, **body).json()
    assert replayed["outcome"] == "replayed" and replayed["memory"]["id"] == first["id"]
    assert replayed["memory"]["state"] == "superseded"
