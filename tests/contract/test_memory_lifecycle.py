"""Stories across the memory operations (SPEC §10): one memory listed, read, confirmed,
corrected, retracted and another forgotten, its tombstone listed and deleted; and the `state`
(E1) every path that learns or reads a memory answers with: remember, resolve, a turn, ask.
Each operation's own rules live in tests/memory/api/test_<operation>.py."""

import pytest

from memory.models import Tombstone
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
        "withheld_memories",
    }
    # C5: the scope in a memory scope's shape, `everywhere` for `*`, and its id beside it.
    assert forgot.json()["scope"] == {"kind": "everywhere"} and forgot.json()["scope_id"] == "*"
    assert forgot.json()["has_value_hash"] is False
    assert api.get(f"/api/v1/memories/{other['id']}").json()["value"] == ""

    tombstones = api.get("/api/v1/tombstones?user=sam").json()
    assert tombstones["count"] == 1 and tombstones["results"] == [forgot.json()]  # one shape
    assert api.delete(f"/api/v1/tombstones/{forgot.json()['id']}").status_code == 204
    assert Tombstone.objects.count() == 0


def test_it_gives_resolve_remember_and_a_turns_extracted_a_state_e1(api, ctx, conv):
    extracted = api.post(
        "/api/v1/memory/remember", {"context": ctx, "text": "My dog's name is Rex."}, format="json"
    ).json()["extracted"]
    assert [e["memory"]["state"] for e in extracted] == ["active"]
    active = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()["active"]
    assert active and all(
        m["state"] == "active" and m["state_detail"]["rule"] is None for m in active
    )
    turn_body = {"turn_key": "t1", "content": "My dog's name is Max."}
    turn = api.post(f"/api/v1/conversations/{conv.pk}/turns", turn_body, format="json").json()
    assert [e["memory"]["state"] for e in turn["extracted"]] == ["active"]
    assert (
        api.get(f"/api/v1/memories/{extracted[0]['memory']['id']}").json()["state"] == "superseded"
    )
    replay = api.post(f"/api/v1/conversations/{conv.pk}/turns", turn_body, format="json").json()
    assert replay["extracted"] == turn["extracted"]
    ask = api.get("/api/v1/memory/ask", {"user": "sam", "q": "What is my dog's name?"}).json()
    if ask["memory"] is not None:
        assert ask["memory"]["state"] == "active"
