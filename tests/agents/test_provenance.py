"""What a connection stores carries the connection as its provenance (SPEC §15 M3): P1
admits it, at most `uncertain` while the connection is its only source; every page that shows
such a value — the memories page, its history, the forget pages, what was marked no longer
true — says "told by <name>"; the export names it in a self-contained `told_by` list that the
import restores, and names the connection that asked for each decision."""

import json

import pytest

from agents.models import Connection
from agents.services import connection_create
from config.pages import day
from memory.models import MemoryRecord
from policy.models import DecisionLog
from tests.agents.conftest import tool_caller

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def unthrottled(monkeypatch):
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})


@pytest.fixture
def told(sam):
    """sam's connection "Desk" saves the cat's name: (the connection, the save's answer)."""
    connection = connection_create(user=sam, name="Desk", access="write").connection
    body, is_error = tool_caller(connection)("save", {"key": "cat.name", "value": "Miso"})
    assert not is_error and body["outcome"] == "created", body
    return connection, body


def test_it_stores_the_connection_as_provenance_and_recalls_it_as_uncertain(sam, told):
    """§15 M3, P1: a connection's save is stored with the connection (id, name) as who told
    it, and a prompt may hold it — as `uncertain`, the connection being its only source."""
    connection, body = told
    row = MemoryRecord.objects.get(pk=body["memory"]["id"])
    assert (row.told_by_connection, row.told_by_name) == (str(connection.pk), "Desk")
    recalled, _ = tool_caller(connection)("recall", {"query": "cat"})
    assert [(m["value"], m["certainty"]) for m in recalled["memories"]] == [("Miso", "uncertain")]


def _told_on(body) -> str:
    return day(MemoryRecord.objects.get(pk=body["memory"]["id"]).recorded_at)


def test_it_shows_told_by_the_connections_name_on_the_memories_page(page, told):
    """§15 M3: the memories page says who told it: "Told by Desk"."""
    _, body = told
    r = page.get("/memories/")
    assert r.status_code == 200
    assert f"Told by Desk on {_told_on(body)}</span>" in r.content.decode()


def test_it_shows_told_by_the_connections_name_on_the_history_page(page, told):
    """§15 M3: the memory's history says who set the assistant's value: "Told by Desk" in its
    "Set by" column, not "the companion's inference"."""
    _, body = told
    r = page.get(f"/memories/{body['memory']['id']}/history")
    assert r.status_code == 200
    html = r.content.decode()
    assert '<td data-label="Set by">Told by Desk</td>' in html
    assert "inference" not in html


def test_it_shows_told_by_the_connections_name_on_the_forget_pages(page, told):
    """§15 M3: the forget page and the "Forget selected" confirmation show the memory's card
    with who told it."""
    _, body = told
    said = f"Told by Desk on {_told_on(body)}."
    one = page.get(f"/memories/{body['memory']['id']}/forget")
    assert one.status_code == 200
    assert said in one.content.decode()
    several = page.post("/memories/forget-selected", {"selected": [body["memory"]["id"]]})
    assert several.status_code == 200
    assert said in several.content.decode()


def test_it_shows_told_by_the_connections_name_on_the_no_longer_true_page(page, sam, told):
    """§15 M3: a value the assistant told that the user marked no longer true still says who
    told it."""
    _, body = told
    r = page.post(f"/memories/{body['memory']['id']}/retract")
    assert r.status_code == 302
    listed = page.get("/memories/no-longer-true/")
    assert listed.status_code == 200
    assert f"· told by Desk on {_told_on(body)} · marked no longer true on" in (
        listed.content.decode()
    )


def test_it_exports_a_self_contained_told_by_that_the_import_restores(api, sam, told):
    """§15 M3, §9: the export names the connection in `told_by` (kind, id, name) and needs no
    connection row: once the connection is gone, the export still names it, and deleting the
    user then importing the snapshot restores the provenance."""
    connection, body = told
    Connection.objects.filter(pk=connection.pk).delete()
    snapshot = json.loads(json.dumps(api.get("/api/v1/users/sam/export").json()))
    [exported] = [m for m in snapshot["memories"] if m["id"] == body["memory"]["id"]]
    assert exported["told_by"] == [{"kind": "connection", "id": str(connection.pk), "name": "Desk"}]
    assert api.delete("/api/v1/users/sam").status_code == 204
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 200, r.content[:2000]
    row = MemoryRecord.objects.get(pk=body["memory"]["id"])
    assert (row.told_by_connection, row.told_by_name) == (str(connection.pk), "Desk")
    again = api.get("/api/v1/users/sam/export").json()
    assert again["memories"] == snapshot["memories"]


def test_it_imports_a_memory_of_an_older_file_with_no_teller(api, sam, told):
    """§9: a file written before §15 has no `told_by`; its memories are imported told by no
    connection."""
    _, body = told
    snapshot = json.loads(json.dumps(api.get("/api/v1/users/sam/export").json()))
    for memory in snapshot["memories"]:
        del memory["told_by"]
    assert api.delete("/api/v1/users/sam").status_code == 204
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 200, r.content[:2000]
    row = MemoryRecord.objects.get(pk=body["memory"]["id"])
    assert (row.told_by_connection, row.told_by_name) == ("", "")


def test_it_stores_what_remember_extracts_as_told_by_the_connection(sam):
    """§15 M3: `remember`'s extraction carries the connection as provenance too."""
    connection = connection_create(user=sam, name="Desk", access="write").connection
    body, is_error = tool_caller(connection)("remember", {"text": "My dog's name is Rex."})
    assert not is_error and [r["outcome"] for r in body["extracted"]] == ["created"], body
    row = MemoryRecord.objects.get(pk=body["extracted"][0]["memory"]["id"])
    assert (row.key, row.told_by_connection, row.told_by_name) == (
        "dog.name",
        str(connection.pk),
        "Desk",
    )


def test_it_exports_the_connection_that_asked_for_a_decision_and_imports_it(api, sam, rowan):
    """§15 M3, §9: each exported decision carries its `requester` — the asking connection's id
    (`connection:<id>`), empty for the chat runtime — and the import restores it; a file
    written before names no requester, and its decisions are imported with none."""
    connection = connection_create(user=sam, name="Desk", access="read").connection
    body, is_error = tool_caller(connection)(
        "decide", {"capability": "tone.playful", "character": rowan.slug}
    )
    assert not is_error
    by_runtime = api.post(
        "/api/v1/policy/decide",
        {"context": {"user": "sam", "character": rowan.slug}, "capability": "tone.playful"}
        | {"requested_by": "user"},
        format="json",
    ).json()
    snapshot = json.loads(json.dumps(api.get("/api/v1/users/sam/export").json()))
    requesters = {d["id"]: d["requester"] for d in snapshot["decisions"]}
    assert requesters == {
        body["decision_id"]: f"connection:{connection.pk}",
        by_runtime["decision_id"]: "",
    }
    assert api.delete("/api/v1/users/sam").status_code == 204
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 200, r.content[:2000]
    assert (
        DecisionLog.objects.get(pk=body["decision_id"]).requester == f"connection:{connection.pk}"
    )
    assert api.get("/api/v1/users/sam/export").json()["decisions"] == snapshot["decisions"]

    for decision in snapshot["decisions"]:
        del decision["requester"]
    assert api.delete("/api/v1/users/sam").status_code == 204
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 200, r.content[:2000]
    assert set(DecisionLog.objects.values_list("requester", flat=True)) == {""}
