"""`POST /memories/{id}/forget` `{everywhere?, whole_key?}` (SPEC §4 F1–F3, §10): a forget
answers its tombstone, which never holds the value; every record it covers is `forgotten` with
its value erased; evidence from before the forget is blocked, the user saying it again after
is not. Bad input is a 400 naming the field, an unknown id a 404."""

import uuid

import pytest

from memory.models import MemoryRecord, Tombstone
from tests.factories import MessageFactory
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory, learn

pytestmark = pytest.mark.django_db

TOMBSTONE_KEYS = {
    "id",
    "user",
    "scope",
    "scope_id",
    "key",
    "has_value_hash",
    "forgotten_at",
    "blocks_sources_before",
    "withheld_messages",
    "withheld_memories",
}


def forget(api, memory_id, body=None):
    return api.post(f"/api/v1/memories/{memory_id}/forget", body or {}, format="json")


def test_it_answers_the_tombstone_without_the_value_f1(api, sam):
    memory = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    r = forget(api, memory["id"])
    assert r.status_code == 200
    tombstone = r.json()
    assert set(tombstone) == TOMBSTONE_KEYS and "Rex" not in r.content.decode()
    assert (tombstone["user"], tombstone["key"], tombstone["scope_id"]) == (
        "sam",
        "pet.name",
        "user:sam",
    )
    assert tombstone["scope"] == {"kind": "user"} and tombstone["has_value_hash"] is False
    assert tombstone["blocks_sources_before"] == tombstone["forgotten_at"]


def test_it_forgets_the_key_in_every_scope_when_asked_everywhere_f1(api, sam, conv):
    mine = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    here = assert_memory(
        api,
        key="pet.name",
        value="Rex",
        scope={"kind": "conversation", "conversation": str(conv.pk)},
    ).json()["memory"]
    tombstone = forget(api, mine["id"], {"everywhere": True}).json()
    assert (tombstone["scope"], tombstone["scope_id"]) == ({"kind": "everywhere"}, "*")
    for memory_id in (mine["id"], here["id"]):
        assert api.get(f"/api/v1/memories/{memory_id}").json()["state"] == "forgotten"


def test_it_erases_every_covered_value_and_keeps_skeletons_f2(api, sam):
    old = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    new = api.post(f"/api/v1/memories/{old['id']}/correct", {"value": "Max"}, format="json").json()[
        "memory"
    ]
    forget(api, new["id"])
    for memory_id in (old["id"], new["id"]):
        body = api.get(f"/api/v1/memories/{memory_id}").json()
        assert (body["value"], body["status"], body["key"]) == ("", "forgotten", "pet.name")
    assert set(MemoryRecord.objects.values_list("value", flat=True)) == {""}


def test_it_blocks_evidence_from_before_the_forget_but_not_saying_it_again_f3(api, sam, conv):
    said = MessageFactory(conversation=conv, content="My dog's name is Rex.")
    forget(api, assert_memory(api, key="pet.name", value="Rex").json()["memory"]["id"])
    blocked = assert_memory(api, key="pet.name", value="Rex", sources=[str(said.pk)])
    assert blocked.status_code == 200
    assert (blocked.json()["outcome"], blocked.json()["reason"]) == ("blocked", "forgotten")
    assert blocked.json()["memory"] is None
    again = assert_memory(api, key="pet.name", value="Rex")
    assert again.status_code == 201 and again.json()["memory"]["state"] == "active"


@pytest.mark.parametrize(
    ("body", "field"),
    [({"everywhere": "all"}, "everywhere"), ({"whole_key": []}, "whole_key"), ({"x": 1}, "x")],
)
def test_it_refuses_bad_input_with_a_400_naming_the_field_and_forgets_nothing(
    api, sam, body, field
):
    memory = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    assert_problem(forget(api, memory["id"], body), 400, "validation_error", field)
    assert not Tombstone.objects.exists()
    assert api.get(f"/api/v1/memories/{memory['id']}").json()["value"] == "Rex"


def test_it_answers_404_for_an_unknown_memory(api, sam):
    assert_problem(forget(api, uuid.uuid4()), 404, "not_found")
    assert_problem(forget(api, "not-a-uuid"), 404, "not_found")
    assert not Tombstone.objects.exists()


def test_it_says_a_forgotten_record_is_forgotten_e1(api, sam):
    first = learn(api, key="pet.name", value="Rex", valid_from=None).json()["memory"]
    api.post(f"/api/v1/memories/{first['id']}/forget", {}, format="json")
    body = api.get(f"/api/v1/memories/{first['id']}").json()
    assert (body["state"], body["state_detail"]["rule"], body["value"]) == ("forgotten", "R2", "")


def test_it_documents_withheld_memories_in_the_schema_f7_2():
    """F7.2: the forget's answer (and a tombstone read back) carries `withheld_memories`, an
    integer, beside `withheld_messages`; `withheld` is among the documented reasons."""
    from drf_spectacular.generators import SchemaGenerator

    schemas = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    tombstone = schemas["TombstoneOutput"]
    assert tombstone["properties"]["withheld_memories"]["type"] == "integer"
    assert {"withheld_messages", "withheld_memories"} <= set(tombstone["required"])
    assert "`withheld`" in schemas["ExclusionOutput"]["properties"]["reason"]["description"]
