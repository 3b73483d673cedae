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


def test_it_answers_a_reply_a_forget_withholds_without_its_text_f7_5(api, sam, conv):
    """F6.3 with F7.5: a reply committed after a forget to a turn planned with the purged
    record is stored withheld and answered `withheld: true`, `content: null` — the first
    answer and every replay — while the stored message keeps its words for the user."""
    from memory.forgetting import forget_key

    turn(api, conv, "t1", "My cat is called Miso.")
    planned = turn(api, conv, "t2", "What is my cat called?", plan={"budget": 4000}).json()
    assert [m["value"] for m in planned["plan"]["memories"]] == ["Miso"]
    forget_key(user=sam, key="cat.name", scope_id="*")
    url = f"/api/v1/turns/{planned['id']}/reply"
    first = api.post(url, {"content": "It is called Miso."}, format="json")
    assert first.status_code == 201
    message = first.json()["message"]
    assert (message["content"], message["withheld"]) == (None, True)
    again = api.post(url, {"content": "It is called Miso."}, format="json")
    assert again.status_code == 200
    assert again.json() == {"message": message, "replayed": True}
    assert Message.objects.get(pk=message["id"]).content == "It is called Miso."


def test_it_answers_a_plain_reply_with_its_text_and_withheld_false_f7_5(api, conv):
    """F7.5: a reply no forget touches is answered with its text and `withheld: false`."""
    t = turn(api, conv, "t1", "hi").json()
    first = api.post(f"/api/v1/turns/{t['id']}/reply", {"content": "Hello!"}, format="json")
    assert first.json()["message"]["content"] == "Hello!"
    assert first.json()["message"]["withheld"] is False
