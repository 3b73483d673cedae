"""SPEC §9: export, erase and import."""

import json

import pytest

from conversations.models import Conversation, Turn
from memory.models import MemoryRecord, Tombstone
from turns.continuity import play

pytestmark = pytest.mark.django_db

SNAPSHOT_KEYS = {
    "format",
    "exported_at",
    "user",
    "characters",
    "conversations",
    "messages",
    "turns",
    "memories",
    "tombstones",
    "policy_rules",
    "policy_version",
    "keys",
    "reveals",
}


def fingerprint(api, user):
    """Resolver answers for every context of the user, and the plan hash of every turn."""
    out = {}
    for conv in Conversation.objects.filter(user=user).select_related("character"):
        scenes = set(Turn.objects.filter(conversation=conv).values_list("scene", flat=True)) | {
            None
        }
        for scene in sorted(scenes, key=str):
            ctx = {
                "user": user.username,
                "character": conv.character.slug,
                "conversation": str(conv.pk),
                "now": "2030-01-01T00:00:00Z",
            }
            if scene:
                ctx["scene"] = scene
            body = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()
            body.pop("trace", None)
            out[(str(conv.pk), scene)] = body
    for turn_id in (
        Turn.objects.filter(user=user).order_by("created_at").values_list("id", flat=True)
    ):
        plan = api.get(
            f"/api/v1/turns/{turn_id}/prompt-plan",
            {"budget": 1200, "now": "2030-01-01T00:00:00Z", "capabilities": "tone.playful"},
        ).json()
        out[str(turn_id)] = (plan["plan_hash"], [d["effect"] for d in plan["policy"]])
    return out


@pytest.fixture
def story(db):
    _, user = play(username="wren", keep=True)
    return user


def test_it_exports_every_section(api, story):
    snapshot = api.get("/api/v1/users/wren/export").json()
    assert SNAPSHOT_KEYS <= set(snapshot)
    assert snapshot["format"] == "companion-memory/2"
    assert snapshot["user"]["ref"] == "wren" and snapshot["user"]["secret"]
    assert len(snapshot["memories"]) == MemoryRecord.objects.filter(user=story).count()
    assert {k["key"] for k in snapshot["keys"]} <= {m["key"] for m in snapshot["memories"]}


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


def test_it_deletes_a_user_and_everything_theirs(api, story):
    assert api.delete("/api/v1/users/wren").status_code == 204
    assert api.get("/api/v1/users/wren/export").status_code == 404
    assert api.delete("/api/v1/users/wren").status_code == 404
    assert not Turn.objects.exists() and not MemoryRecord.objects.exists()


def test_it_erases_support_notes_and_keeps_the_reveals_of_a_deleted_user_pseudonymously(api, story):
    """§9: DELETE erases everything of the user, support's notes about them included; S2: the
    reveal log stays, with the user replaced by a one-way pseudonym."""
    from memory.models import MemoryRecord as Record
    from support.models import PrivateTextAccess, RevealGrant, SupportAction
    from support.reveals import reveal_open
    from support.services import support_retract
    from tests.factories import UserFactory

    staff = UserFactory(username="helper", is_staff=True, is_superuser=True)
    record = Record.objects.filter(user=story).exclude(status="forgotten").first()
    support_retract(staff=staff, record_ids=[record.pk], reason="asked by mail")
    reveal_open(staff=staff, user="wren", reason="Ticket 12: wren asked by mail")
    assert SupportAction.objects.filter(subject_id=story.pk).exists()
    assert PrivateTextAccess.objects.filter(subject_id=story.pk).exists()
    assert api.delete("/api/v1/users/wren").status_code == 204
    assert not SupportAction.objects.filter(subject_id=story.pk).exists()
    assert not PrivateTextAccess.objects.filter(subject_id=story.pk).exists()
    grant = RevealGrant.objects.get()
    assert grant.subject_id is None and grant.subject_pseudonym.startswith("deleted-user-")
    assert "wren" not in grant.reason
    assert PrivateTextAccess.objects.filter(subject_pseudonym=grant.subject_pseudonym).count() == 2
