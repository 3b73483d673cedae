"""`GET /tombstones/{id}` (SPEC §10 C4, C5): a tombstone reads back with its scope as an object
(a forget everywhere has the `everywhere` scope, every other kind the memory scope's shape),
in two queries."""

import uuid

import pytest

from tests.helpers import assert_problem
from tests.turns.api.reads import turn

pytestmark = pytest.mark.django_db


def test_it_reads_a_tombstone_back_with_its_scope_as_an_object_c4_c5(api, conv):
    created = turn(api, conv, "t1", "My cat's name is Miso.")
    memory_id = created["extracted"][0]["memory"]["id"]
    forgot = api.post(f"/api/v1/memories/{memory_id}/forget", {}, format="json").json()
    assert forgot["scope"] == {"kind": "user"} and forgot["scope_id"] == "user:sam"
    got = api.get(f"/api/v1/tombstones/{forgot['id']}")
    assert got.status_code == 200 and got.json() == forgot
    listed = api.get("/api/v1/tombstones?user=sam").json()["results"]
    assert listed == [forgot]
    assert_problem(api.get(f"/api/v1/tombstones/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(api.get(f"/api/v1/tombstones/{forgot['id']}?x=1"), 400, "validation_error", "x")


def test_it_gives_a_forget_everywhere_the_everywhere_scope_c5(api, conv):
    created = turn(api, conv, "t1", "My cat's name is Miso.")
    memory_id = created["extracted"][0]["memory"]["id"]
    forgot = api.post(
        f"/api/v1/memories/{memory_id}/forget", {"everywhere": True}, format="json"
    ).json()
    assert forgot["scope"] == {"kind": "everywhere"} and forgot["scope_id"] == "*"


def test_it_gives_every_tombstone_scope_kind_the_memory_scope_shape_c5(api, conv):
    """A forget in each kind of scope answers the scope the memory showed."""
    scopes = [
        {"kind": "character", "character": "captain-rowan"},
        {"kind": "conversation", "conversation": str(conv.pk)},
        {"kind": "scene", "conversation": str(conv.pk), "scene": "deck:2"},
    ]
    for i, scope in enumerate(scopes):
        made = api.post(
            "/api/v1/memories",
            {"user": "sam", "key": f"thing{i}.name", "value": "x", "scope": scope},
            format="json",
        ).json()
        assert made["memory"]["scope"] == scope
        forgot = api.post(
            f"/api/v1/memories/{made['memory']['id']}/forget", {}, format="json"
        ).json()
        assert forgot["scope"] == scope


def test_it_reads_a_tombstone_in_two_queries_c4(api, sam, django_assert_num_queries):
    from memory.models import Tombstone

    tombstone = Tombstone.objects.create(
        user=sam,
        scope_id="*",
        key="pet.name",
        forgotten_at=sam.date_joined,
        blocks_sources_before=sam.date_joined,
    )
    with django_assert_num_queries(2):  # token, tombstone with its user
        assert api.get(f"/api/v1/tombstones/{tombstone.pk}").status_code == 200
