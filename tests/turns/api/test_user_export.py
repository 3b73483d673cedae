"""`GET /users/{user}/export` (SPEC §9): the snapshot has every section; each tombstone carries
the links of what it withholds (F6, F7.2); it is read in a constant number of queries."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import MemoryRecord
from tests.memory.api.calls import lagging
from tests.turns.api.calls import forget, turn
from tests.turns.api.snapshots import SNAPSHOT_KEYS

pytestmark = pytest.mark.django_db


def test_it_exports_every_section(api, story):
    snapshot = api.get("/api/v1/users/wren/export").json()
    assert SNAPSHOT_KEYS <= set(snapshot)
    assert snapshot["format"] == "companion-memory/3"
    assert snapshot["user"]["ref"] == "wren" and snapshot["user"]["secret"]
    assert len(snapshot["memories"]) == MemoryRecord.objects.filter(user=story).count()
    assert {k["key"] for k in snapshot["keys"]} <= {m["key"] for m in snapshot["memories"]}


def test_it_exports_no_state_and_refuses_one_on_import_e1(api, sam):
    """E1: `state` and `state_detail` are derived: never exported, refused on import like any
    unknown field."""
    lagging(api)
    snapshot = api.get("/api/v1/users/sam/export").json()
    assert snapshot["memories"]
    assert not any({"state", "state_detail"} & set(m) for m in snapshot["memories"])
    api.delete("/api/v1/users/sam")
    snapshot["memories"][0]["state"] = "active"
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 400 and "memories.0.state" in r.json()["errors"], r.json()


def test_it_exports_the_memories_each_forget_withholds_sorted_f7_2(api, priya):
    """F7.2 (§9): each exported tombstone carries `withheld_memories`, the sorted ids of the
    user's other memories it withholds — where Priya works and the routine that names her,
    never the taste that does not — in format `companion-memory/3`; the row holds no value."""
    forget(api, priya["sister"])
    snapshot = api.get("/api/v1/users/sam/export").json()
    assert snapshot["format"] == "companion-memory/3"
    [row] = snapshot["tombstones"]
    assert row["withheld_memories"] == sorted([priya["works"], priya["visits"]])
    assert row["withheld_messages"] == [priya["said"]]
    assert "priya" not in json.dumps(row).lower()


def test_it_exports_an_empty_list_for_a_forget_that_withholds_no_memory_f7_2(api, priya):
    """F7.2 (§9): a forget that withholds no other memory exports `withheld_memories: []`, and
    an undo takes its links with it."""
    tea = forget(api, priya["tea"])
    sister = forget(api, priya["sister"])
    assert api.delete(f"/api/v1/tombstones/{sister['id']}").status_code == 204
    [row] = api.get("/api/v1/users/sam/export").json()["tombstones"]
    assert (row["id"], row["withheld_memories"]) == (tea["id"], [])


def test_it_exports_in_the_same_number_of_queries_however_much_the_user_holds(
    api, sam, conv, django_assert_num_queries
):
    """§9: the file is read in a constant number of queries, memory's rows (read by
    `memory.portability`) as the conversation's: one turn and one memory cost what many turns,
    memories, versions, sources and forgets with their links cost."""
    turn(api, conv, "t1", "My dog's name is Rex.")
    with CaptureQueriesContext(connection) as few:
        assert api.get("/api/v1/users/sam/export").status_code == 200
    expected = len(few.captured_queries)  # counted now: the next request clears the log
    for i, said in enumerate(("I like jazz.", "I live in Boston.", "Priya works at Acme.")):
        turn(api, conv, f"t{i + 2}", said)
    turn(api, conv, "t5", "Actually, I live in Paris.")
    lagging(api)
    forget(api, MemoryRecord.objects.get(user=sam, key="user.likes").pk)
    with django_assert_num_queries(expected):
        snapshot = api.get("/api/v1/users/sam/export").json()
    assert len(snapshot["memories"]) == MemoryRecord.objects.filter(user=sam).count() > 5
    assert len(snapshot["messages"]) == 5 and len(snapshot["tombstones"]) == 1
