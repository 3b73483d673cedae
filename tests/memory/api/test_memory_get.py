"""`GET /memories/{id}` (SPEC §10, E1): one memory with its `state` now and `state_detail`
{rule, by, since}, even where the stored `status` lags (W12); read in a constant number of
queries; an unknown or malformed id is a 404."""

import uuid

import pytest
from django.db import connection

from tests.helpers import assert_problem
from tests.memory.api.calls import forget, learn, priya

pytestmark = pytest.mark.django_db


def test_it_says_a_record_stored_active_is_superseded_by_its_correction_e1(api, lagging):
    body = api.get(f"/api/v1/memories/{lagging['v1']}").json()
    assert (body["status"], body["state"]) == ("active", "superseded")
    assert body["state_detail"]["rule"] == "R5" and body["state_detail"]["by"] == lagging["v2"]
    assert body["state_detail"]["since"].endswith("Z")


def test_it_says_a_record_stored_active_past_valid_until_is_expired_since_e1(api, lagging):
    body = api.get(f"/api/v1/memories/{lagging['ended']}").json()
    assert (body["status"], body["state"]) == ("active", "expired")
    assert body["state_detail"] == {"rule": "R3", "by": None, "since": "2026-02-01T00:00:00Z"}


def test_it_says_the_current_record_is_active_with_an_empty_detail_e1(api, lagging):
    body = api.get(f"/api/v1/memories/{lagging['v2']}").json()
    assert body["state"] == "active"
    assert body["state_detail"] == {"rule": None, "by": None, "since": None}


def test_it_gets_a_memorys_state_in_a_constant_number_of_queries_e1(
    api, sam, django_assert_num_queries
):
    """Token, the record with its user, its scoped key's records, the tombstones (and the
    clock on PostgreSQL)."""
    first = learn(api, key="dog.name", value="v0", valid_from=None).json()["memory"]
    for i in range(1, 20):
        learn(api, key="dog.name", value=f"v{i}", valid_from=None)
    api.get(f"/api/v1/memories/{first['id']}")  # the process's catalog cache is warm from here on
    clock = 1 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(4 + clock):
        body = api.get(f"/api/v1/memories/{first['id']}").json()
    assert body["state"] == "superseded"


def test_it_answers_404_for_unknown_ids(api, sam):
    assert_problem(api.get(f"/api/v1/memories/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(api.get("/api/v1/memories/not-a-uuid"), 404, "not_found")


def test_it_masks_a_memory_a_forget_withholds_f7_2(api, sam):
    """F7.2: a runtime read of a withheld memory by its id answers it as the list does with
    `include_withheld`: value null, the key's free part masked."""
    ids = priya(api)
    forget(api, ids["sister"])
    body = api.get(f"/api/v1/memories/{ids['works']}").json()
    assert (body["id"], body["key"], body["value"]) == (ids["works"], "people.*.works_at", None)
    assert api.get(f"/api/v1/memories/{ids['tea']}").json()["value"] == "green tea"
