"""`POST /users/{user}/import` (SPEC §9): a user exported, erased and imported resolves and
plans the same; an import whose row differs, a key whose cardinality differs, a malformed
snapshot or another user's is refused and imports nothing; existing tombstones apply to
imported rows. Export and delete have a file each beside it."""

import json

import pytest

from conversations.models import Conversation
from memory.models import MemoryRecord, Tombstone
from tests.turns.api.snapshots import fingerprint

pytestmark = pytest.mark.django_db


def test_it_migrates_a_user_with_identical_resolutions_and_plan_hashes(api, story):
    """§9: export → erase → import gives identical resolver results and plan hashes."""
    before = fingerprint(api, story)
    snapshot = json.loads(json.dumps(api.get("/api/v1/users/wren/export").json()))
    assert api.delete("/api/v1/users/wren").status_code == 204
    assert not MemoryRecord.objects.filter(user__username="wren").exists()
    r = api.post("/api/v1/users/wren/import", snapshot, format="json")
    assert r.status_code == 200, r.json()
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="wren")
    assert fingerprint(api, user) == before
    again = api.post("/api/v1/users/wren/import", snapshot, format="json")
    assert again.status_code == 200 and again.json()["created"] == 0


def test_it_refuses_an_import_whose_row_differs_and_imports_nothing(api, story):
    snapshot = api.get("/api/v1/users/wren/export").json()
    api.delete("/api/v1/users/wren")
    api.post("/api/v1/users/wren/import", snapshot, format="json")
    changed = json.loads(json.dumps(snapshot))
    changed["memories"][0]["confidence"] = 0.123
    changed["conversations"].append(
        {
            "id": "11111111-1111-1111-1111-111111111111",
            "character": "lamplighter",
            "title": "new",
            "created_at": "2026-01-01T00:00:00Z",
            "last_seq": 0,
        }
    )
    r = api.post("/api/v1/users/wren/import", changed, format="json")
    assert r.status_code == 409 and r.json()["code"] == "import_conflict"
    assert not Conversation.objects.filter(pk="11111111-1111-1111-1111-111111111111").exists()


def test_it_refuses_a_key_whose_cardinality_differs(api, story):
    snapshot = api.get("/api/v1/users/wren/export").json()
    api.delete("/api/v1/users/wren")
    for k in snapshot["keys"]:
        if k["key"] == "user.dislikes":
            k["cardinality"] = "one"
    r = api.post("/api/v1/users/wren/import", snapshot, format="json")
    assert r.status_code == 409 and r.json()["code"] == "import_conflict"
    assert not MemoryRecord.objects.filter(user__username="wren").exists()


def test_it_applies_existing_tombstones_to_imported_rows(api, story):
    """§9/F3: a forget that exists where the snapshot lands applies to what it brings."""
    snapshot = api.get("/api/v1/users/wren/export").json()
    api.delete("/api/v1/users/wren")
    api.put("/api/v1/users/wren", {}, format="json")
    from django.contrib.auth import get_user_model

    from memory.forgetting import forget_key

    user = get_user_model().objects.get(username="wren")
    forget_key(user=user, key="user.dislikes", scope_id="*")
    snapshot["user"]["secret"] = None  # the new user keeps its own secret
    assert api.post("/api/v1/users/wren/import", snapshot, format="json").status_code == 200
    rows = MemoryRecord.objects.filter(user=user, key="user.dislikes")
    assert rows.exists() and set(rows.values_list("value", flat=True)) == {""}
    assert Tombstone.objects.filter(user=user, key="user.dislikes").exists()


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s.update(format="other/9"), "format"),
        (lambda s: s["memories"][0].update(key="Bad Key"), "memories.0.key"),
        (lambda s: s["memories"][0].update(valid_from="yesterday"), "memories.0.valid_from"),
        (
            lambda s: s["messages"][0].update(conversation="22222222-2222-2222-2222-222222222222"),
            "messages.0.conversation",
        ),
        (lambda s: s.update(memories="lots"), "memories"),
    ],
)
def test_it_refuses_a_malformed_snapshot_naming_the_field(api, story, mutate, field):
    snapshot = api.get("/api/v1/users/wren/export").json()
    api.delete("/api/v1/users/wren")
    mutate(snapshot)
    r = api.post("/api/v1/users/wren/import", snapshot, format="json")
    assert r.status_code == 400 and field in r.json()["errors"], r.json()
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="wren").exists()


def test_it_refuses_a_snapshot_of_another_user(api, story):
    snapshot = api.get("/api/v1/users/wren/export").json()
    r = api.post("/api/v1/users/someone-else/import", snapshot, format="json")
    assert r.status_code == 400 and "user.ref" in r.json()["errors"]
