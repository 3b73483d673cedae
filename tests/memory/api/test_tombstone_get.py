"""`GET /tombstones/{id}` (SPEC §10 C4, C5): a tombstone reads back with its scope as an object
(a forget everywhere has the `everywhere` scope, every other kind the memory scope's shape),
with how many messages and other memories it withholds (F6, F7.2), in two queries."""

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


def test_it_counts_the_memories_a_forget_withholds_beside_its_messages_f7_2(
    api, sam, conv, django_assert_num_queries
):
    """F7.2: `GET /tombstones/{id}` carries `withheld_memories` beside `withheld_messages` —
    as the forget answered it — still in two queries, and the schema declares it an integer."""
    from drf_spectacular.generators import SchemaGenerator

    turn(api, conv, "t1", "Priya phoned me tonight.")
    ids = {}
    for key, value in (
        ("family.sister.name", "Priya"),
        ("people.priya.works_at", "Globex"),
        ("user.routine", "visiting Priya on Sundays"),
        ("user.likes", "green tea"),
    ):
        made = api.post(
            "/api/v1/memories",
            {"user": "sam", "key": key, "value": value, "scope": {"kind": "user"}},
            format="json",
        )
        ids[key] = made.json()["memory"]["id"]
    forgot = api.post(
        f"/api/v1/memories/{ids['family.sister.name']}/forget", {}, format="json"
    ).json()
    assert (forgot["withheld_messages"], forgot["withheld_memories"]) == (1, 2)
    with django_assert_num_queries(2):  # token, tombstone with its user and both counts
        got = api.get(f"/api/v1/tombstones/{forgot['id']}").json()
    assert got == forgot
    shape = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"][
        "TombstoneOutput"
    ]
    assert shape["properties"]["withheld_memories"]["type"] == "integer"
    assert {"withheld_messages", "withheld_memories"} <= set(shape["required"])
