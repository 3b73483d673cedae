"""`GET /tombstones?user=` (SPEC §4 F1, §10): the user's forgets, newest first, as a paginated
list, never a value, each with how many messages and other memories it withholds (F6, F7.2),
in a constant number of queries; another user's forgets are not among them. A missing or
unknown user is a 400 naming `user`."""

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


def test_it_counts_each_forgets_withheld_memories_in_the_same_queries_f7_2(
    api, sam, django_assert_num_queries
):
    """F7.2: each listed forget carries `withheld_memories` (how many of the user's other
    memories it withholds, counting one another forget also withholds) beside
    `withheld_messages`; the list's queries stay four however many forgets it lists."""
    for key, value in (
        ("people.priya.works_at", "Globex"),
        ("user.routine", "visiting Priya and Zoë on Sundays"),
    ):
        assert_memory(api, user="sam", key=key, value=value)
    sister = forgotten(api, "sam", "family.sister.name", value="Priya")
    friend = forgotten(api, "sam", "user.best_friend", value="Zoë")
    tea = forgotten(api, "sam", "user.likes", value="green tea")
    assert [t["withheld_memories"] for t in (sister, friend, tea)] == [2, 1, 0]
    with django_assert_num_queries(4):  # token, user, count, page (both counts in the page)
        body = api.get("/api/v1/tombstones", {"user": "sam"}).json()
    assert [(t["id"], t["withheld_memories"], t["withheld_messages"]) for t in body["results"]] == [
        (tea["id"], 0, 0),
        (friend["id"], 1, 0),
        (sister["id"], 2, 0),
    ]


def test_it_lists_2_or_20_forgets_in_the_same_four_queries(api, sam, django_assert_num_queries):
    """SPEC §10 (DESIGN habit 6): the list costs as many queries for 20 forgets as for 2."""
    for i in range(2):
        forgotten(api, "sam", f"thing{i}.name", value=f"v{i}")
    with django_assert_num_queries(4):  # token, user, count, page (its counts in the page)
        few = api.get("/api/v1/tombstones", {"user": "sam"}).json()
    for i in range(2, 20):
        forgotten(api, "sam", f"thing{i}.name", value=f"v{i}")
    with django_assert_num_queries(4):
        many = api.get("/api/v1/tombstones", {"user": "sam"}).json()
    assert (few["count"], len(few["results"])) == (2, 2)
    assert (many["count"], len(many["results"])) == (20, 20)
