"""SPEC §2 through the API (§10): a confirm of what the user already confirmed or corrected
answers 200 `unchanged` with that record and stores nothing; a correct with the same
normalised value is a confirm."""

import pytest

from memory.models import MemoryRecord

pytestmark = pytest.mark.django_db


def assert_memory(api, **body):
    body.setdefault("scope", {"kind": "user"})
    return api.post("/api/v1/memories", body, format="json").json()["memory"]


@pytest.mark.parametrize("authority", ["user-confirmed", "user-corrected"])
def test_it_answers_unchanged_for_a_confirm_of_the_users_own_word(api, sam, authority):
    """§2: 200, outcome `unchanged`, the record itself; nothing stored."""
    record = assert_memory(api, user="sam", key="dog.name", value="Rex", authority=authority)
    before = MemoryRecord.objects.count()

    r = api.post(f"/api/v1/memories/{record['id']}/confirm", {}, format="json")

    assert r.status_code == 200
    assert r.json()["outcome"] == "unchanged" and r.json()["memory"] == record
    assert MemoryRecord.objects.count() == before


def test_it_answers_a_correct_with_the_same_normalised_value_like_a_confirm(api, sam):
    """§2: `correct {value: " REX "}` of "Rex" is a confirm: 201 with a `user-confirmed`
    record of the stored value, superseding it."""
    record = assert_memory(api, user="sam", key="dog.name", value="Rex", authority="rule-extracted")

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
    record = assert_memory(api, user="sam", key="dog.name", value="Rex", authority="user-confirmed")
    before = MemoryRecord.objects.count()

    r = api.post(f"/api/v1/memories/{record['id']}/correct", {"value": "rex"}, format="json")

    assert r.status_code == 200
    assert r.json()["outcome"] == "unchanged" and r.json()["memory"] == record
    assert MemoryRecord.objects.count() == before
