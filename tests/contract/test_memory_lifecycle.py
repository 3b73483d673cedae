"""The memory endpoints that read and change one memory (SPEC §10): `GET /memories`,
`GET /memories/{id}` after confirm, correct, retract and forget, the forget's tombstone, and
404 for unknown ids."""

import uuid

import pytest

from memory.models import Tombstone
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory

pytestmark = pytest.mark.django_db


def test_it_lists_gets_confirms_corrects_retracts_and_forgets(api, sam):
    created = assert_memory(
        api, user="sam", key="pet.name", value="Rex", authority="rule-extracted"
    ).json()["memory"]
    listed = api.get("/api/v1/memories?user=sam&key=pet.name").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == created["id"]
    assert api.get(f"/api/v1/memories/{created['id']}").json()["value"] == "Rex"

    confirmed = api.post(f"/api/v1/memories/{created['id']}/confirm", {}, format="json")
    assert (
        confirmed.status_code == 201 and confirmed.json()["memory"]["authority"] == "user-confirmed"
    )
    corrected = api.post(
        f"/api/v1/memories/{confirmed.json()['memory']['id']}/correct",
        {"value": "Max"},
        format="json",
    )
    assert corrected.status_code == 201 and corrected.json()["memory"]["value"] == "Max"
    retracted = api.post(
        f"/api/v1/memories/{corrected.json()['memory']['id']}/retract", {}, format="json"
    )
    assert retracted.status_code == 200 and len(retracted.json()["records"]) == 3

    other = assert_memory(api, user="sam", key="dog.name", value="Bolt").json()["memory"]
    forgot = api.post(f"/api/v1/memories/{other['id']}/forget", {"everywhere": True}, format="json")
    assert forgot.status_code == 200
    assert set(forgot.json()) == {
        "id",
        "user",
        "scope",
        "scope_id",
        "key",
        "has_value_hash",
        "forgotten_at",
        "blocks_sources_before",
        "withheld_messages",
    }
    # C5: the scope in a memory scope's shape, `everywhere` for `*`, and its id beside it.
    assert forgot.json()["scope"] == {"kind": "everywhere"} and forgot.json()["scope_id"] == "*"
    assert forgot.json()["has_value_hash"] is False
    assert api.get(f"/api/v1/memories/{other['id']}").json()["value"] == ""

    tombstones = api.get("/api/v1/tombstones?user=sam").json()
    assert tombstones["count"] == 1
    assert api.delete(f"/api/v1/tombstones/{forgot.json()['id']}").status_code == 204
    assert Tombstone.objects.count() == 0


def test_it_answers_404_for_unknown_ids(api, sam):
    assert_problem(api.get(f"/api/v1/memories/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(api.get("/api/v1/memories/not-a-uuid"), 404, "not_found")
    assert_problem(
        api.post(f"/api/v1/memories/{uuid.uuid4()}/confirm", {}, format="json"), 404, "not_found"
    )
    assert_problem(api.delete(f"/api/v1/tombstones/{uuid.uuid4()}"), 404, "not_found")
