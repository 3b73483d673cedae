"""SPEC §9 for what the pages added: the user's time zone (in the user object) and who made a
forget (in its tombstone) come back equal after export → erase → import."""

import pytest
from django.contrib.auth import get_user_model

from conversations.scopes import Scope
from memory.forgetting import memory_forget
from memory.models import MemoryProfile, Tombstone
from memory.services import memory_assert, profile_set_time_zone
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def wren(db):
    user = UserFactory(username="wren")
    profile_set_time_zone(user=user, time_zone="Pacific/Auckland")
    for key, value in (("dog.name", "Rex"), ("cat.name", "Tom")):
        record = memory_assert(user=user, key=key, value=value, scope=Scope("user")).record
        memory_forget(record_id=record.id, user=user, by="support" if key == "dog.name" else "user")
    return user


def without_time(snapshot):
    return {k: v for k, v in snapshot.items() if k != "exported_at"}


def test_it_exports_the_time_zone_and_who_forgot(api, wren):
    snapshot = api.get("/api/v1/users/wren/export").json()
    assert snapshot["user"]["time_zone"] == "Pacific/Auckland"
    assert sorted((t["key"], t["forgotten_by"]) for t in snapshot["tombstones"]) == [
        ("cat.name", "user"),
        ("dog.name", "support"),
    ]


def test_it_keeps_the_time_zone_and_who_forgot_through_export_erase_import(api, wren):
    """§9: every exported entity comes back equal."""
    before = api.get("/api/v1/users/wren/export").json()
    assert api.delete("/api/v1/users/wren").status_code == 204

    r = api.post("/api/v1/users/wren/import", before, format="json")

    assert r.status_code == 200, r.json()
    user = get_user_model().objects.get(username="wren")
    assert MemoryProfile.objects.get(user=user).time_zone == "Pacific/Auckland"
    assert dict(Tombstone.objects.filter(user=user).values_list("key", "forgotten_by")) == {
        "dog.name": "support",
        "cat.name": "user",
    }
    assert without_time(api.get("/api/v1/users/wren/export").json()) == without_time(before)


def test_it_exports_an_unset_time_zone_as_null_and_keeps_it_unset(api, db):
    UserFactory(username="kit")
    snapshot = api.get("/api/v1/users/kit/export").json()
    assert snapshot["user"]["time_zone"] is None
    api.delete("/api/v1/users/kit")
    assert api.post("/api/v1/users/kit/import", snapshot, format="json").status_code == 200
    assert MemoryProfile.objects.get(user__username="kit").time_zone == ""


def test_it_still_imports_a_snapshot_without_the_new_fields(api, wren):
    snapshot = api.get("/api/v1/users/wren/export").json()
    api.delete("/api/v1/users/wren")
    del snapshot["user"]["time_zone"]
    for tombstone in snapshot["tombstones"]:
        del tombstone["forgotten_by"]
    assert api.post("/api/v1/users/wren/import", snapshot, format="json").status_code == 200
    assert set(Tombstone.objects.values_list("forgotten_by", flat=True)) == {"user"}


def test_it_keeps_a_local_choice_of_time_zone_on_import(api, wren):
    snapshot = api.get("/api/v1/users/wren/export").json()
    profile_set_time_zone(user=wren, time_zone="Europe/Lisbon")
    assert api.post("/api/v1/users/wren/import", snapshot, format="json").status_code == 200
    assert MemoryProfile.objects.get(user=wren).time_zone == "Europe/Lisbon"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s["user"].update(time_zone="Mars/Olympus"), "user.time_zone"),
        (lambda s: s["user"].update(time_zone=7), "user.time_zone"),
        (lambda s: s["tombstones"][0].update(forgotten_by="admin"), "tombstones.0.forgotten_by"),
    ],
)
def test_it_refuses_a_bad_value_naming_the_field(api, wren, mutate, field):
    snapshot = api.get("/api/v1/users/wren/export").json()
    api.delete("/api/v1/users/wren")
    mutate(snapshot)
    r = api.post("/api/v1/users/wren/import", snapshot, format="json")
    assert r.status_code == 400 and field in r.json()["errors"], r.json()
    assert not get_user_model().objects.filter(username="wren").exists()
