"""`POST /memories/{id}/correct` `{value}` (SPEC §2 W6, §10): the user's correction is a new
version with authority `user-corrected` that supersedes the record it corrects, which stays in
storage (R5 hides it); the same normalised value is a confirm. A missing value is a 400, an
unknown id a 404."""

import uuid

import pytest

from memory.models import MemoryRecord, MemoryWithholding
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory, forget, priya

pytestmark = pytest.mark.django_db


def correct(api, memory_id, body):
    return api.post(f"/api/v1/memories/{memory_id}/correct", body, format="json")


def test_it_stores_a_new_version_that_supersedes_the_old_w6(api, sam):
    old = assert_memory(api, key="pet.name", value="Rex", authority="rule-extracted").json()
    r = correct(api, old["memory"]["id"], {"value": "Max"})
    assert r.status_code == 201 and r.json()["outcome"] == "created"
    new = r.json()["memory"]
    assert (new["value"], new["authority"], new["version"], new["supersedes"]) == (
        "Max",
        "user-corrected",
        2,
        old["memory"]["id"],
    )
    assert new["state"] == "active"
    kept = api.get(f"/api/v1/memories/{old['memory']['id']}").json()
    assert (kept["value"], kept["state"]) == ("Rex", "superseded")
    assert (kept["state_detail"]["rule"], kept["state_detail"]["by"]) == ("R5", new["id"])


def test_it_answers_a_correct_with_the_same_normalised_value_like_a_confirm(api, sam):
    """§2: `correct {value: " REX "}` of "Rex" is a confirm: 201 with a `user-confirmed`
    record of the stored value, superseding it."""
    record = assert_memory(
        api, user="sam", key="dog.name", value="Rex", authority="rule-extracted"
    ).json()["memory"]

    r = api.post(f"/api/v1/memories/{record['id']}/correct", {"value": " REX "}, format="json")

    assert r.status_code == 201
    memory = r.json()["memory"]
    assert (r.json()["outcome"], memory["authority"], memory["value"], memory["supersedes"]) == (
        "created",
        "user-confirmed",
        "Rex",
        record["id"],
    )


def test_it_answers_unchanged_to_a_same_value_correct_of_a_confirmed_memory(api, sam):
    record = assert_memory(
        api, user="sam", key="dog.name", value="Rex", authority="user-confirmed"
    ).json()["memory"]
    before = MemoryRecord.objects.count()

    r = api.post(f"/api/v1/memories/{record['id']}/correct", {"value": "rex"}, format="json")

    assert r.status_code == 200
    assert r.json()["outcome"] == "unchanged" and r.json()["memory"] == record
    assert MemoryRecord.objects.count() == before


@pytest.mark.parametrize(("key", "old"), [("dog.name", "Rex"), ("user.likes", "green tea")])
def test_it_answers_unchanged_to_the_same_correction_made_again(api, sam, key, old):
    """§2: the correction sent again (another tab, a retry) finds its memory replaced by the
    user's own word for that value: 200 `unchanged` with it and nothing stored, for a `one`
    key and for a `many` key's value slot alike."""
    record = assert_memory(api, key=key, value=old, authority="rule-extracted").json()["memory"]
    first = api.post(
        f"/api/v1/memories/{record['id']}/correct", {"value": "Biscuit"}, format="json"
    )
    assert first.status_code == 201
    before = MemoryRecord.objects.count()

    again = api.post(
        f"/api/v1/memories/{record['id']}/correct", {"value": "biscuit"}, format="json"
    )

    assert again.status_code == 200, again.content
    assert again.json()["outcome"] == "unchanged"
    assert again.json()["memory"] == first.json()["memory"]
    assert MemoryRecord.objects.count() == before


def test_it_refuses_with_a_409_a_correction_of_a_memory_replaced_by_another_value(api, sam):
    record = assert_memory(api, key="dog.name", value="Rex", authority="rule-extracted").json()[
        "memory"
    ]
    api.post(f"/api/v1/memories/{record['id']}/correct", {"value": "Max"}, format="json")
    r = api.post(f"/api/v1/memories/{record['id']}/correct", {"value": "Bo"}, format="json")
    assert_problem(r, 409, "conflict")


def test_it_refuses_a_correction_without_a_value_and_stores_nothing(api, sam):
    old = assert_memory(api, key="pet.name", value="Rex").json()["memory"]
    assert_problem(correct(api, old["id"], {}), 400, "validation_error", "value")
    assert_problem(
        correct(api, old["id"], {"value": "Max", "why": "typo"}), 400, "validation_error", "why"
    )
    assert MemoryRecord.objects.count() == 1


def test_it_answers_404_for_an_unknown_memory(api, sam):
    assert_problem(correct(api, uuid.uuid4(), {"value": "Max"}), 404, "not_found")
    assert_problem(correct(api, "not-a-uuid", {"value": "Max"}), 404, "not_found")
    assert not MemoryRecord.objects.exists()


def test_it_releases_a_withheld_memory_the_user_corrects_after_the_forget_f7_2(api, sam, ctx):
    """F7.2: the user's correction after a forget is new evidence: the record is released and
    the corrected value is in the next prompt."""
    ids = priya(api)
    forget(api, ids["sister"])
    r = api.post(f"/api/v1/memories/{ids['works']}/correct", {"value": "Initech"}, format="json")
    assert r.status_code == 201, r.content
    assert not MemoryWithholding.objects.filter(memory_id=ids["works"]).exists()
    body = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()
    assert sorted(p["value"] for p in body["prompt"]) == ["Initech", "green tea"]
    assert {"id": ids["visits"], "reason": "withheld"} in body["prompt_excluded"]
