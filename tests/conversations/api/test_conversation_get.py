"""`GET /conversations/{id}` (SPEC §10 C4): a conversation reads back with its `last_seq`."""

import uuid

import pytest

from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_reads_a_conversation_back_with_last_seq_c4(api, sam, rowan):
    created = api.post(
        "/api/v1/conversations",
        {"user": "sam", "character": "captain-rowan", "title": "Night watch"},
        format="json",
    ).json()
    assert created["last_seq"] == 0
    conv_id = created["id"]
    got = api.get(f"/api/v1/conversations/{conv_id}")
    assert got.status_code == 200 and got.json() == created
    assert set(created) == {"id", "user", "character", "title", "created_at", "last_seq"}
    api.post(
        f"/api/v1/conversations/{conv_id}/turns",
        {"turn_key": "t1", "content": "Hi."},
        format="json",
    )
    assert api.get(f"/api/v1/conversations/{conv_id}").json()["last_seq"] == 1
    assert_problem(api.get(f"/api/v1/conversations/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(
        api.get(f"/api/v1/conversations/{conv_id}?full=1"), 400, "validation_error", "full"
    )
