"""`GET /tombstones?user=` (SPEC §4 F1, §10): the user's forgets, newest first, as a paginated
list, never a value; another user's forgets are not among them. A missing or unknown user is a
400 naming `user`."""

import pytest

from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory

pytestmark = pytest.mark.django_db


def forgotten(api, user, key, value="Rex"):
    memory = assert_memory(api, user=user, key=key, value=value).json()["memory"]
    return api.post(f"/api/v1/memories/{memory['id']}/forget", {}, format="json").json()


def test_it_lists_the_users_forgets_newest_first_without_values_f1(api, sam, alex):
    first = forgotten(api, "sam", "pet.name")
    second = forgotten(api, "sam", "dog.name", value="Bolt")
    forgotten(api, "alex", "pet.name")
    r = api.get("/api/v1/tombstones", {"user": "sam"})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 2 and body["results"] == [second, first]
    assert "Rex" not in r.content.decode() and "Bolt" not in r.content.decode()


def test_it_pages_the_list(api, sam):
    made = [forgotten(api, "sam", f"thing{i}.name", value=f"v{i}") for i in range(3)]
    first = api.get("/api/v1/tombstones", {"user": "sam", "limit": 2}).json()
    assert first["count"] == 3 and len(first["results"]) == 2 and first["next"]
    rest = api.get(first["next"]).json()
    assert first["results"] + rest["results"] == made[::-1]


def test_it_lists_nothing_for_a_user_who_forgot_nothing(api, sam):
    body = api.get("/api/v1/tombstones", {"user": "sam"}).json()
    assert (body["count"], body["results"]) == (0, [])


def test_it_refuses_a_missing_or_unknown_user_with_a_400_naming_it(api, sam):
    assert_problem(api.get("/api/v1/tombstones"), 400, "validation_error", "user")
    assert_problem(
        api.get("/api/v1/tombstones", {"user": "nobody"}), 400, "validation_error", "user"
    )
