"""`POST /memories/{id}/retract` (SPEC §2 W10, W4, §10): retracting a slot closes now every
record of it that has not ended and every record they supersede, stamping `retracted_at`; a
record not started yet gets an empty window; history keeps them all. A body is a 400, an
unknown id a 404."""

import uuid

import pytest

from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory, learn

pytestmark = pytest.mark.django_db


def retract(api, memory_id, body=None):
    return api.post(f"/api/v1/memories/{memory_id}/retract", body or {}, format="json")


def test_it_closes_the_slot_and_what_it_supersedes_now_w10(api, sam):
    old = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    new = api.post(f"/api/v1/memories/{old['id']}/correct", {"value": "Max"}, format="json").json()[
        "memory"
    ]
    r = retract(api, new["id"])
    assert r.status_code == 200
    body = r.json()
    assert body["retracted_at"].endswith("Z")
    assert {m["id"] for m in body["records"]} == {old["id"], new["id"]}
    for m in body["records"]:
        assert (m["retracted_at"], m["valid_until"], m["state"]) == (
            body["retracted_at"],
            body["retracted_at"],
            "expired",
        )
    history = api.get("/api/v1/memory/history", {"user": "sam", "key": "pet.name"}).json()
    assert [row["value"] for row in history["results"]] == ["Rex", "Max"]
    assert api.get("/api/v1/memories", {"user": "sam", "state": "active"}).json()["count"] == 0


def test_it_gives_a_record_not_started_yet_an_empty_window_w10(api, sam):
    later = assert_memory(
        api, key="trip.city", value="Lisbon", valid_from="2099-01-01T00:00:00Z"
    ).json()["memory"]
    [closed] = retract(api, later["id"]).json()["records"]
    assert closed["valid_until"] == closed["valid_from"] == "2099-01-01T00:00:00Z"


def test_it_keeps_a_retracted_slot_retracted_against_older_evidence_w4(api, sam):
    current = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    retracted_at = retract(api, current["id"]).json()["retracted_at"]
    late = assert_memory(api, key="pet.name", value="Rex", valid_from="2020-01-01T00:00:00Z")
    born_closed = late.json()["memory"]
    assert (born_closed["valid_until"], born_closed["state"]) == (retracted_at, "expired")
    assert api.get("/api/v1/memories", {"user": "sam", "state": "active"}).json()["count"] == 0


def test_it_refuses_a_body_with_a_400_naming_the_field(api, sam):
    current = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    assert_problem(retract(api, current["id"], {"when": "now"}), 400, "validation_error", "when")
    assert api.get(f"/api/v1/memories/{current['id']}").json()["retracted_at"] is None


def test_it_answers_404_for_an_unknown_memory(api, sam):
    assert_problem(retract(api, uuid.uuid4()), 404, "not_found")
    assert_problem(retract(api, "not-a-uuid"), 404, "not_found")


def test_it_answers_confirm_correct_and_retract_with_states_e1(api, sam):
    first = learn(api, key="pet.name", value="Rex", valid_from=None).json()["memory"]
    confirmed = api.post(f"/api/v1/memories/{first['id']}/confirm", {}, format="json").json()
    assert confirmed["memory"]["state"] == "active"
    again = api.post(
        f"/api/v1/memories/{confirmed['memory']['id']}/confirm", {}, format="json"
    ).json()
    assert (again["outcome"], again["memory"]["state"]) == ("unchanged", "active")
    corrected = api.post(
        f"/api/v1/memories/{confirmed['memory']['id']}/correct", {"value": "Max"}, format="json"
    ).json()
    assert corrected["memory"]["state"] == "active"
    retracted = api.post(
        f"/api/v1/memories/{corrected['memory']['id']}/retract", {}, format="json"
    ).json()
    assert retracted["records"] and all(r["state"] == "expired" for r in retracted["records"])
    # W10 closed the whole chain: the first record too ended when the slot was retracted.
    assert api.get(f"/api/v1/memories/{first['id']}").json()["state"] == "expired"
