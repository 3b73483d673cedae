"""`GET /memories` (SPEC §10, E1): every memory listed carries `state` (its resolution now in
its own scope, R2–R6); `?state=` filters before pagination and `count` agrees, while `?status=`
stays the stored status W12 leaves. The schema describes both fields and the filter."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.scopes import Scope
from memory import services
from tests.factories import MessageFactory, at
from tests.helpers import assert_problem
from tests.memory.api.calls import forget, learn, priya

pytestmark = pytest.mark.django_db


def test_it_filters_the_list_by_state_before_pagination_with_a_count_e1(api, lagging, sam):
    for value in ("a", "b", "c"):  # three more superseded values of another key
        learn(api, key="dog.name", value=value, valid_from=None)
    learn(api, key="dog.name", value="d", valid_from=None)
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
    assert_problem(r, 400, "validation_error", "state")


def test_it_lists_states_in_a_constant_number_of_queries_e1(api, sam):
    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert (
                api.get("/api/v1/memories", {"user": "sam", "state": "superseded"}).status_code
                == 200
            )
        return len(captured)

    for i in range(3):
        learn(api, key=f"thing{i}.name", value=f"v{i}", valid_from=None)
    count()  # the process's catalog cache is warm from here on
    few = count()
    for i in range(40):
        learn(api, key="dog.name", value=f"v{i}", valid_from=None)
    assert count() == few


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
        scope=Scope("user"),
        authority="rule-extracted",
        sources=[str(message.pk)],
    )
    [row] = api.get("/api/v1/memories", {"user": "sam", "key": "pet.name"}).json()["results"]
    assert row["state"] == "active"


def test_it_leaves_withheld_memories_out_unless_asked_and_then_masks_them_f7_2(api, sam):
    """F7.2: `GET /memories` leaves out what a forget withholds; with `include_withheld=true`
    it lists them with value null and the key's free part masked (`people.*.works_at`)."""
    ids = priya(api)
    forget(api, ids["sister"])
    listed = api.get("/api/v1/memories", {"user": "sam", "state": "active"}).json()
    assert [m["id"] for m in listed["results"]] == [ids["tea"]] and listed["count"] == 1
    r = api.get("/api/v1/memories", {"user": "sam", "state": "active", "include_withheld": "true"})
    rows = {m["id"]: m for m in r.json()["results"]}
    assert set(rows) == {ids["works"], ids["visits"], ids["tea"]}
    assert (rows[ids["works"]]["key"], rows[ids["works"]]["value"]) == ("people.*.works_at", None)
    assert (rows[ids["visits"]]["key"], rows[ids["visits"]]["value"]) == ("user.routine", None)
    assert rows[ids["tea"]]["value"] == "green tea"
    assert "Priya" not in r.content.decode() and "Globex" not in r.content.decode()


def test_it_documents_include_withheld_in_the_schema_f7_2():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    params = {p["name"]: p for p in schema["paths"]["/api/v1/memories"]["get"]["parameters"]}
    assert params["include_withheld"]["schema"]["type"] == "boolean"
    assert "F7.2" in params["include_withheld"]["description"]
    value = schema["components"]["schemas"]["MemoryOutput"]["properties"]["value"]
    assert value["type"] == ["string", "null"]  # OpenAPI 3.1: nullable
