"""`GET /memory/history` (SPEC W11, §10): a slot's versions with their effective ends."""

import pytest
from django.db import connection

from tests.memory.api.calls import assert_memory, forget, priya

pytestmark = pytest.mark.django_db


def test_it_shows_history_with_effective_ends(api, sam):
    """W11 through the API: rows in valid-time order with `effective_until`."""
    a = assert_memory(
        api, user="sam", key="pet.name", value="Rex", valid_from="2026-08-01T00:00:00Z"
    ).json()["memory"]
    b = assert_memory(
        api, user="sam", key="pet.name", value="Max", valid_from="2026-08-03T00:00:00Z"
    ).json()["memory"]
    r = api.get("/api/v1/memory/history?user=sam&key=pet.name")
    rows = r.json()["results"]
    assert [row["id"] for row in rows] == [a["id"], b["id"]]
    assert rows[0]["effective_until"] == "2026-08-03T00:00:00Z"
    assert rows[1]["effective_until"] is None


def test_it_gives_each_history_row_its_state_e1(api, lagging):
    rows = api.get("/api/v1/memory/history", {"user": "sam", "key": "basil_plant.name"}).json()[
        "results"
    ]
    assert [(r["value"], r["state"], r["status"]) for r in rows] == [
        ("Harbor", "superseded", "active"),
        ("Marlowe", "active", "active"),
    ]


def test_it_reads_back_a_version_a_forget_withholds_masked_f7_2(api, sam):
    """F7.2: runtime reads never carry a withheld memory's words: after forgetting the sister's
    name "Priya", the history of `people.priya.works_at` answers its version with `value`
    null and the key's free part masked, and nowhere the name or the employer."""
    ids = priya(api)
    forget(api, ids["sister"])
    r = api.get("/api/v1/memory/history", {"user": "sam", "key": "people.priya.works_at"})
    assert r.status_code == 200
    rows = r.json()["results"]
    assert [(row["id"], row["key"], row["value"]) for row in rows] == [
        (ids["works"], "people.*.works_at", None)
    ]
    assert "priya" not in r.content.decode().casefold()
    assert "globex" not in r.content.decode().casefold()


def test_it_answers_2_or_20_versions_in_the_same_queries_w11(api, sam, django_assert_num_queries):
    """SPEC §10 (DESIGN habit 6): a slot's history costs as many queries for 20 versions as
    for 2."""

    def versions(start, stop):
        for day in range(start, stop):
            r = assert_memory(
                api,
                key="pet.name",
                value=f"Rex {day}",
                valid_from=f"2026-03-{day + 1:02}T00:00:00Z",
            )
            assert r.status_code == 201, r.content

    def history():
        return api.get("/api/v1/memory/history", {"user": "sam", "key": "pet.name"}).json()

    versions(0, 2)
    history()  # the process's catalog cache (the key registry) is warm from here on
    # token, user, the slot's records, its tombstones with the user's secret (and the clock on
    # PostgreSQL, which the database keeps)
    clock = 1 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(4 + clock):
        few = history()
    versions(2, 20)
    with django_assert_num_queries(4 + clock):
        many = history()
    assert (few["count"], many["count"]) == (2, 20)
    assert [row["value"] for row in many["results"]] == [f"Rex {day}" for day in range(20)]
