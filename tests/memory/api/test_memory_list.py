"""SPEC E1 over the API: every memory the API returns carries `state` (its resolution now in
its own scope, R2–R6) and `state_detail` {rule, by, since}; `GET /memories?state=` filters
before pagination and `count` agrees. The stored `status` stays as W12 leaves it, so a record
whose status lags shows the truth in `state`. Snapshots (§9) carry neither field."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import services
from tests.factories import MessageFactory, at

pytestmark = pytest.mark.django_db

PAST = "2026-01-01T00:00:00Z"


def assert_memory(api, **body):
    values = {
        "user": "sam",
        "key": "basil_plant.name",
        "value": "Harbor",
        "scope": {"kind": "user"},
        "authority": "rule-extracted",
        "valid_from": PAST,
    }
    values.update(body)
    return api.post("/api/v1/memories", values, format="json")


@pytest.fixture
def lagging(api, sam):
    """basil_plant.name v1 "Harbor" corrected to "Marlowe" (v1 stays stored `active` but is
    superseded), and pet.name stored `active` although its window ended (expired)."""
    v1 = assert_memory(api).json()["memory"]
    v2 = api.post(
        f"/api/v1/memories/{v1['id']}/correct", {"value": "Marlowe"}, format="json"
    ).json()["memory"]
    ended = assert_memory(
        api, key="pet.name", value="Rex", valid_until="2026-02-01T00:00:00Z"
    ).json()["memory"]
    return {"v1": v1["id"], "v2": v2["id"], "ended": ended["id"]}


def test_it_says_a_record_stored_active_is_superseded_by_its_correction_e1(api, lagging):
    body = api.get(f"/api/v1/memories/{lagging['v1']}").json()
    assert (body["status"], body["state"]) == ("active", "superseded")
    assert body["state_detail"]["rule"] == "R5" and body["state_detail"]["by"] == lagging["v2"]
    assert body["state_detail"]["since"].endswith("Z")


def test_it_says_a_record_stored_active_past_valid_until_is_expired_since_e1(api, lagging):
    body = api.get(f"/api/v1/memories/{lagging['ended']}").json()
    assert (body["status"], body["state"]) == ("active", "expired")
    assert body["state_detail"] == {"rule": "R3", "by": None, "since": "2026-02-01T00:00:00Z"}


def test_it_says_the_current_record_is_active_with_an_empty_detail_e1(api, lagging):
    body = api.get(f"/api/v1/memories/{lagging['v2']}").json()
    assert body["state"] == "active"
    assert body["state_detail"] == {"rule": None, "by": None, "since": None}


def test_it_filters_the_list_by_state_before_pagination_with_a_count_e1(api, lagging, sam):
    for value in ("a", "b", "c"):  # three more superseded values of another key
        assert_memory(api, key="dog.name", value=value, valid_from=None)
    assert_memory(api, key="dog.name", value="d", valid_from=None)
    everything = api.get("/api/v1/memories", {"user": "sam"}).json()
    by_state = {}
    for m in everything["results"]:
        by_state.setdefault(m["state"], []).append(m["id"])
    first = api.get("/api/v1/memories", {"user": "sam", "state": "superseded", "limit": 2}).json()
    assert first["count"] == len(by_state["superseded"]) == 4
    assert len(first["results"]) == 2 and first["next"]
    rest = api.get(first["next"]).json()
    ids = [m["id"] for m in first["results"] + rest["results"]]
    assert sorted(ids) == sorted(by_state["superseded"])
    assert all(m["state"] == "superseded" for m in first["results"] + rest["results"])
    active = api.get("/api/v1/memories", {"user": "sam", "state": "active"}).json()
    assert active["count"] == 2 and {m["key"] for m in active["results"]} == {
        "basil_plant.name",
        "dog.name",
    }
    # The stored status filter is still the stored status: every one of them says active.
    stored = api.get("/api/v1/memories", {"user": "sam", "status": "active"}).json()
    assert stored["count"] == everything["count"]


def test_it_refuses_an_unknown_state_with_a_400_naming_the_parameter_e1(api, sam):
    r = api.get("/api/v1/memories", {"user": "sam", "state": "retired"})
    assert r.status_code == 400 and "state" in r.json()["errors"]


def test_it_lists_states_in_a_constant_number_of_queries_e1(api, sam):
    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert (
                api.get("/api/v1/memories", {"user": "sam", "state": "superseded"}).status_code
                == 200
            )
        return len(captured)

    for i in range(3):
        assert_memory(api, key=f"thing{i}.name", value=f"v{i}", valid_from=None)
    count()  # the process's catalog cache is warm from here on
    few = count()
    for i in range(40):
        assert_memory(api, key="dog.name", value=f"v{i}", valid_from=None)
    assert count() == few


def test_it_gets_a_memorys_state_in_a_constant_number_of_queries_e1(
    api, sam, django_assert_num_queries
):
    """Token, the record with its user, its scoped key's records, the tombstones (and the
    clock on PostgreSQL)."""
    first = assert_memory(api, key="dog.name", value="v0", valid_from=None).json()["memory"]
    for i in range(1, 20):
        assert_memory(api, key="dog.name", value=f"v{i}", valid_from=None)
    api.get(f"/api/v1/memories/{first['id']}")  # the process's catalog cache is warm from here on
    clock = 1 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(4 + clock):
        body = api.get(f"/api/v1/memories/{first['id']}").json()
    assert body["state"] == "superseded"


def test_it_gives_each_history_row_its_state_e1(api, lagging):
    rows = api.get("/api/v1/memory/history", {"user": "sam", "key": "basil_plant.name"}).json()[
        "results"
    ]
    assert [(r["value"], r["state"], r["status"]) for r in rows] == [
        ("Harbor", "superseded", "active"),
        ("Marlowe", "active", "active"),
    ]


def test_it_answers_a_write_with_the_new_records_state_e1(api, sam):
    future = assert_memory(
        api, key="trip.city", value="Lisbon", valid_from="2099-01-01T00:00:00Z"
    ).json()
    assert future["memory"]["state"] == "not-yet-valid"
    assert future["memory"]["state_detail"]["rule"] == "R3"
    mine = assert_memory(api, key="pet.name", value="Rex", authority="user-corrected").json()[
        "memory"
    ]
    weaker = assert_memory(
        api, key="pet.name", value="Max", authority="model-inferred", valid_from=None
    ).json()["memory"]
    assert weaker["state"] == "lower-precedence"  # W7
    assert weaker["state_detail"]["by"] == mine["id"] and weaker["state_detail"]["rule"] == "R6"


def test_it_answers_confirm_correct_and_retract_with_states_e1(api, sam):
    first = assert_memory(api, key="pet.name", value="Rex", valid_from=None).json()["memory"]
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


def test_it_answers_a_replayed_assert_with_the_state_now_e1(api, sam):
    body = {"key": "pet.name", "value": "Rex", "valid_from": None, "idempotency_key": "k1"}
    first = assert_memory(api, **body).json()["memory"]
    assert_memory(api, key="pet.name", value="Max", valid_from=None)
    replayed = assert_memory(api, **body).json()
    assert replayed["outcome"] == "replayed" and replayed["memory"]["id"] == first["id"]
    assert replayed["memory"]["state"] == "superseded"


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


def test_it_says_a_forgotten_record_is_forgotten_e1(api, sam):
    first = assert_memory(api, key="pet.name", value="Rex", valid_from=None).json()["memory"]
    api.post(f"/api/v1/memories/{first['id']}/forget", {}, format="json")
    body = api.get(f"/api/v1/memories/{first['id']}").json()
    assert (body["state"], body["state_detail"]["rule"], body["value"]) == ("forgotten", "R2", "")


def test_it_exports_no_state_and_refuses_one_on_import_e1(api, lagging):
    """E1: `state` and `state_detail` are derived: never exported, refused on import like any
    unknown field."""
    snapshot = api.get("/api/v1/users/sam/export").json()
    assert snapshot["memories"]
    assert not any({"state", "state_detail"} & set(m) for m in snapshot["memories"])
    api.delete("/api/v1/users/sam")
    snapshot["memories"][0]["state"] = "active"
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 400 and "memories.0.state" in r.json()["errors"], r.json()


def test_it_describes_state_state_detail_and_the_filter_in_the_schema_e1():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    memory = schema["components"]["schemas"]["MemoryOutput"]
    assert {"state", "state_detail"} <= set(memory["required"])
    params = {p["name"]: p for p in schema["paths"]["/api/v1/memories"]["get"]["parameters"]}
    assert "state" in params
    state_ref = params["state"]["schema"]
    values = (
        state_ref.get("enum")
        or schema["components"]["schemas"][state_ref["$ref"].rsplit("/", 1)[1]]["enum"]
    )
    assert set(values) == {
        "active",
        "not-yet-valid",
        "expired",
        "forgotten",
        "superseded",
        "lower-precedence",
    }


def test_it_makes_a_record_active_from_its_source_messages_time_e1(api, sam, conv):
    """E1 at the request's time: a record learned from a message is active right after."""
    message = MessageFactory(conversation=conv, created_at=at("2026-03-01T10:00"))
    services.memory_assert(
        user=sam,
        key="pet.name",
        value="Rex",
        scope=services.Scope("user"),
        authority="rule-extracted",
        sources=[str(message.pk)],
    )
    [row] = api.get("/api/v1/memories", {"user": "sam", "key": "pet.name"}).json()["results"]
    assert row["state"] == "active"
