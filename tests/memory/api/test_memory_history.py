"""`GET /memory/history` (SPEC W11, §10): a slot's versions with their effective ends."""

import pytest

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
