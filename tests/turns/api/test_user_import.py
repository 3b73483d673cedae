"""`POST /users/{user}/import` (SPEC §9): a user exported, erased and imported resolves and
plans the same; an import whose row differs, a key whose cardinality differs, a malformed
snapshot or another user's is refused and imports nothing; existing tombstones apply to
imported rows; the links of what each forget withholds come back (F6, F7.2), and files of the
earlier formats import with the links they carry. Export and delete have a file each beside
it."""

import json
import uuid

import pytest

from conversations.models import Conversation
from memory.models import MemoryRecord, MemoryWithholding, Tombstone, Withholding
from tests.turns.api.calls import forget, plan
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


def memory_links() -> set[tuple[str, str]]:
    return {
        (str(t), str(m)) for t, m in MemoryWithholding.objects.values_list("tombstone", "memory")
    }


def exported(api) -> dict:
    return json.loads(json.dumps(api.get("/api/v1/users/sam/export").json()))


def without_exported_at(snapshot: dict) -> dict:
    return {k: v for k, v in snapshot.items() if k != "exported_at"}


def test_it_restores_the_memory_links_so_plans_stay_the_same_f7_2(api, priya):
    """F7.2 (§9): export → delete → import restores every (tombstone, memory) link, so the
    export file, the tombstones' counts and the plan (its hash and what it leaves out) are
    the same; importing the file again adds no link (idempotent)."""
    tombstone = forget(api, priya["sister"])
    assert tombstone["withheld_memories"] == 2
    before = plan(api, priya["turn"]).json()
    withheld = {
        e["id"] for e in before["excluded"] if (e["kind"], e["reason"]) == ("memory", "withheld")
    }
    assert withheld == {priya["works"], priya["visits"]}
    links = memory_links()
    assert links == {(tombstone["id"], priya["works"]), (tombstone["id"], priya["visits"])}
    snapshot = exported(api)
    assert api.delete("/api/v1/users/sam").status_code == 204
    assert not MemoryWithholding.objects.exists()
    assert api.post("/api/v1/users/sam/import", snapshot, format="json").status_code == 200
    assert memory_links() == links
    assert without_exported_at(exported(api)) == without_exported_at(snapshot)
    after = plan(api, priya["turn"]).json()
    assert (after["plan_hash"], after["excluded"]) == (before["plan_hash"], before["excluded"])
    listed = api.get("/api/v1/tombstones", {"user": "sam"}).json()["results"]
    assert [(t["withheld_messages"], t["withheld_memories"]) for t in listed] == [(1, 2)]
    again = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert again.status_code == 200 and again.json()["created"] == 0
    assert memory_links() == links


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (
            lambda t, ids: t.update(withheld_memories=[str(uuid.UUID(int=7))]),
            "tombstones.0.withheld_memories.0",
            "Not a memory of this snapshot.",
        ),
        (
            lambda t, ids: t.update(withheld_memories=[ids["works"], ids["works"]]),
            "tombstones.0.withheld_memories",
            "Each memory at most once.",
        ),
        (
            lambda t, ids: t.update(withheld_memories=[ids["sister"]]),
            "tombstones.0.withheld_memories.0",
            "A forgotten memory holds no value: no forget withholds it.",
        ),
        (
            lambda t, ids: t.update(withheld_memories=["not-an-id"]),
            "tombstones.0.withheld_memories.0",
            "Must be a valid UUID.",
        ),
    ],
)
def test_it_refuses_memory_links_that_name_no_memory_of_the_file_f7_2(
    api, priya, mutate, field, message
):
    """F7.2 (§9): an import checks that `withheld_memories` names memories of the file that a
    forget could withhold (not forgotten), each once; otherwise a 400 names the field and
    nothing is imported."""
    forget(api, priya["sister"])
    snapshot = exported(api)
    assert api.delete("/api/v1/users/sam").status_code == 204
    mutate(snapshot["tombstones"][0], priya)
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 400 and r.json()["errors"] == {field: [message]}, r.json()
    assert not Tombstone.objects.exists() and not MemoryRecord.objects.exists()


def test_it_imports_a_file_of_format_2_with_no_memory_links_f7_2(api, priya):
    """F7.2 (§9): a `companion-memory/2` file (no `withheld_memories`) imports with its message
    links (F6: the message that says the name, the reply still to come of the turn planned
    with her) and no memory links."""
    tombstone = forget(api, priya["sister"])
    f6_links = set(Withholding.objects.values_list("tombstone", "message", "turn"))
    assert (uuid.UUID(tombstone["id"]), uuid.UUID(priya["said"]), None) in f6_links
    snapshot = exported(api)
    snapshot["format"] = "companion-memory/2"
    for row in snapshot["tombstones"]:
        del row["withheld_memories"]
    assert api.delete("/api/v1/users/sam").status_code == 204
    assert api.post("/api/v1/users/sam/import", snapshot, format="json").status_code == 200
    assert not MemoryWithholding.objects.exists()
    assert set(Withholding.objects.values_list("tombstone", "message", "turn")) == f6_links
    [row] = exported(api)["tombstones"]
    assert (row["withheld_messages"], row["withheld_memories"]) == ([priya["said"]], [])


def test_it_refuses_memory_links_in_a_file_of_format_2_f7_2(api, priya):
    """F7.2 (§9): memory links are not part of `companion-memory/2`: a 400 names the field."""
    forget(api, priya["sister"])
    snapshot = exported(api)
    snapshot["format"] = "companion-memory/2"
    assert api.delete("/api/v1/users/sam").status_code == 204
    r = api.post("/api/v1/users/sam/import", snapshot, format="json")
    assert r.status_code == 400 and r.json()["errors"] == {
        "tombstones.0.withheld_memories": ["Not part of the format companion-memory/2."]
    }


def test_it_drops_the_link_of_a_memory_an_existing_tombstone_purges_on_import_f7_2(api, priya):
    """F3 + F7.2 (§9): a forget stored where the file lands purges the imported memory it
    covers, and a purged memory is withheld by no forget (it holds no value): its link goes,
    the others stay, and the export says so."""
    from django.contrib.auth import get_user_model

    from memory.forgetting import forget_key

    tombstone = forget(api, priya["sister"])
    snapshot = exported(api)
    assert api.delete("/api/v1/users/sam").status_code == 204
    api.put("/api/v1/users/sam", {}, format="json")
    forget_key(user=get_user_model().objects.get(username="sam"), key="user.routine", scope_id="*")
    snapshot["user"]["secret"] = None  # the new user keeps its own secret
    assert api.post("/api/v1/users/sam/import", snapshot, format="json").status_code == 200
    assert MemoryRecord.objects.get(pk=priya["visits"]).status == "forgotten"
    assert memory_links() == {(tombstone["id"], priya["works"])}
    rows = {t["id"]: t["withheld_memories"] for t in exported(api)["tombstones"]}
    assert rows[tombstone["id"]] == [priya["works"]]
