"""`GET /users/{user}/export` (SPEC §9): the snapshot has every section."""

import pytest

from memory.models import MemoryRecord
from tests.turns.api.snapshots import SNAPSHOT_KEYS

pytestmark = pytest.mark.django_db


def test_it_exports_every_section(api, story):
    snapshot = api.get("/api/v1/users/wren/export").json()
    assert SNAPSHOT_KEYS <= set(snapshot)
    assert snapshot["format"] == "companion-memory/2"
    assert snapshot["user"]["ref"] == "wren" and snapshot["user"]["secret"]
    assert len(snapshot["memories"]) == MemoryRecord.objects.filter(user=story).count()
    assert {k["key"] for k in snapshot["keys"]} <= {m["key"] for m in snapshot["memories"]}
