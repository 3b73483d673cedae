"""`POST /turns/{id}/reply` (SPEC §7 I4): a reply is committed exactly once."""

import pytest

from conversations.models import Message
from tests.turns.api.calls import turn

pytestmark = pytest.mark.django_db


def test_it_commits_a_reply_exactly_once(api, conv):
    """I4: 201 the first time; retries with the same or other content get the first message."""
    t = turn(api, conv, "t1", "hi").json()
    first = api.post(f"/api/v1/turns/{t['id']}/reply", {"content": "Hello!"}, format="json")
    assert first.status_code == 201 and first.json()["replayed"] is False
    assert first.json()["message"]["seq"] == 2 and first.json()["message"]["role"] == "assistant"
    for content in ("Hello!", "Something else"):
        again = api.post(f"/api/v1/turns/{t['id']}/reply", {"content": content}, format="json")
        assert again.status_code == 200 and again.json() == {**first.json(), "replayed": True}
    assert Message.objects.filter(role="assistant").count() == 1
