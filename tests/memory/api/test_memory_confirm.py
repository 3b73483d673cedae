"""`POST /memories/{id}/confirm` (SPEC §2, §10): the user confirming a memory stores a
`user-confirmed` version superseding it (201); a confirm of what the user already confirmed or
corrected — also the same confirm made again once its memory is superseded — answers 200
`unchanged` with that record and stores nothing; another memory no longer current is a 409. A
body is a 400, an unknown id a 404."""

import uuid

import pytest

from memory.models import MemoryRecord, MemoryWithholding
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory, forget, priya

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("authority", ["user-confirmed", "user-corrected"])
def test_it_answers_unchanged_for_a_confirm_of_the_users_own_word(api, sam, authority):
    """§2: 200, outcome `unchanged`, the record itself; nothing stored."""
    record = assert_memory(
        api, user="sam", key="dog.name", value="Rex", authority=authority
    ).json()["memory"]
    before = MemoryRecord.objects.count()

    r = api.post(f"/api/v1/memories/{record['id']}/confirm", {}, format="json")

    assert r.status_code == 200
    assert r.json()["outcome"] == "unchanged" and r.json()["memory"] == record
    assert MemoryRecord.objects.count() == before


def test_it_answers_unchanged_to_the_same_confirm_made_again_of_the_memory_it_superseded(api, sam):
    """§2: a confirm made again — a retry after a lost answer — finds the memory no longer
    current, but what holds its slot is the user's own word for its value: 200 `unchanged`
    with that memory and nothing stored, as the memories page says "nothing changed"."""
    record = assert_memory(api, key="dog.name", value="Rex", authority="rule-extracted").json()[
        "memory"
    ]
    first = api.post(f"/api/v1/memories/{record['id']}/confirm", {}, format="json")
    assert first.status_code == 201
    before = MemoryRecord.objects.count()

    again = api.post(f"/api/v1/memories/{record['id']}/confirm", {}, format="json")

    assert again.status_code == 200, again.content
    assert again.json()["outcome"] == "unchanged"
    assert again.json()["memory"] == first.json()["memory"]
    assert MemoryRecord.objects.count() == before


def test_it_refuses_with_a_409_a_memory_that_another_value_replaced(api, sam):
    """§2: only a memory active now is confirmed; the user's own word for another value is
    not this confirm made again."""
    record = assert_memory(api, key="dog.name", value="Rex", authority="rule-extracted").json()[
        "memory"
    ]
    corrected = api.post(
        f"/api/v1/memories/{record['id']}/correct", {"value": "Max"}, format="json"
    )
    assert corrected.status_code == 201
    before = MemoryRecord.objects.count()

    r = api.post(f"/api/v1/memories/{record['id']}/confirm", {}, format="json")

    assert_problem(r, 409, "conflict")
    assert MemoryRecord.objects.count() == before


def test_it_stores_a_user_confirmed_version_superseding_the_memory(api, sam):
    record = assert_memory(api, key="dog.name", value="Rex", authority="rule-extracted").json()[
        "memory"
    ]
    r = api.post(f"/api/v1/memories/{record['id']}/confirm", {}, format="json")
    assert r.status_code == 201
    memory = r.json()["memory"]
    assert (r.json()["outcome"], memory["authority"], memory["value"], memory["supersedes"]) == (
        "created",
        "user-confirmed",
        "Rex",
        record["id"],
    )
    assert api.get(f"/api/v1/memories/{record['id']}").json()["state"] == "superseded"


def test_it_refuses_a_body_with_a_400_naming_the_field(api, sam):
    record = assert_memory(api, key="dog.name", value="Rex").json()["memory"]
    r = api.post(f"/api/v1/memories/{record['id']}/confirm", {"value": "Rex"}, format="json")
    assert_problem(r, 400, "validation_error", "value")
    assert MemoryRecord.objects.count() == 1


def test_it_answers_404_for_unknown_ids(api, sam):
    assert_problem(
        api.post(f"/api/v1/memories/{uuid.uuid4()}/confirm", {}, format="json"), 404, "not_found"
    )


def test_it_releases_a_withheld_memory_the_user_confirms_after_the_forget_f7_2(api, sam, ctx):
    """F7.2: the user's confirm after a forget is new evidence: it releases the record from
    every tombstone forgotten before it, and the record is in the next prompt again."""
    ids = priya(api)
    forget(api, ids["sister"])
    cousin = assert_memory(api, key="family.cousin.name", value="Globex").json()["memory"]["id"]
    forget(api, cousin)
    assert MemoryWithholding.objects.filter(memory_id=ids["works"]).count() == 2
    r = api.post(f"/api/v1/memories/{ids['works']}/confirm", {}, format="json")
    assert r.status_code == 200, r.content
    assert not MemoryWithholding.objects.filter(memory_id=ids["works"]).exists()
    assert MemoryWithholding.objects.filter(memory_id=ids["visits"]).exists()
    body = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()
    assert sorted(p["value"] for p in body["prompt"]) == ["Globex", "green tea"]
