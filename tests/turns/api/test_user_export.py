"""`GET /users/{user}/export` (SPEC §9): the snapshot has every section."""

import pytest

from memory.models import MemoryRecord
from tests.memory.api.calls import lagging
from tests.turns.api.snapshots import SNAPSHOT_KEYS

pytestmark = pytest.mark.django_db


def test_it_exports_every_section(api, story):
    snapshot = api.get("/api/v1/users/wren/export").json()
    assert SNAPSHOT_KEYS <= set(snapshot)
    assert snapshot["format"] == "companion-memory/2"
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
