"""`DELETE /tombstones/{id}` (SPEC §4 F4, §10): undoing a forget answers 204 and deletes the
tombstone; the erased values do not come back, but old or new evidence may create the memory
again. An unknown or already deleted tombstone is a 404."""

import uuid

import pytest

from memory.models import Tombstone
from tests.factories import MessageFactory
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory

pytestmark = pytest.mark.django_db


def test_it_deletes_the_tombstone_and_lets_old_evidence_create_the_memory_again_f4(api, sam, conv):
    said = MessageFactory(conversation=conv, content="My dog's name is Rex.")
    memory = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    tombstone = api.post(f"/api/v1/memories/{memory['id']}/forget", {}, format="json").json()
    r = api.delete(f"/api/v1/tombstones/{tombstone['id']}")
    assert r.status_code == 204 and r.content == b""
    assert not Tombstone.objects.exists()
    assert_problem(api.get(f"/api/v1/tombstones/{tombstone['id']}"), 404, "not_found")
    erased = api.get(f"/api/v1/memories/{memory['id']}").json()
    assert (erased["value"], erased["state"]) == ("", "forgotten")
    again = assert_memory(api, key="pet.name", value="Rex", sources=[str(said.pk)])
    assert again.status_code == 201
    assert (again.json()["outcome"], again.json()["memory"]["state"]) == ("created", "active")


def test_it_answers_404_for_an_unknown_or_already_deleted_tombstone(api, sam):
    memory = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    tombstone = api.post(f"/api/v1/memories/{memory['id']}/forget", {}, format="json").json()
    assert api.delete(f"/api/v1/tombstones/{tombstone['id']}").status_code == 204
    assert_problem(api.delete(f"/api/v1/tombstones/{tombstone['id']}"), 404, "not_found")
    assert_problem(api.delete(f"/api/v1/tombstones/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(api.delete("/api/v1/tombstones/not-a-uuid"), 404, "not_found")
