"""`POST /conversations/{id}/turns` (SPEC §7 I1, I4, §8): the next seq, the extractor on the
new message, retries answered from what was stored, bad messages refused."""

import pytest

from conversations.models import Message, Turn
from memory.models import MemoryRecord
from tests.factories import MessageFactory
from tests.turns.api.calls import turn

pytestmark = pytest.mark.django_db


def test_it_creates_a_turn_with_the_next_seq_and_extractions(api, conv):
    """I1/§8: the user message gets the next seq; the extractor runs with it as source."""
    MessageFactory(conversation=conv)
    r = turn(api, conv, "t1", "My dog's name is Rex.")
    assert r.status_code == 201
    body = r.json()
    assert body["user_message"]["seq"] == 2
    assert body["status"] == "open" and body["scene"] is None
    [extracted] = body["extracted"]
    assert (extracted["outcome"], extracted["memory"]["key"], extracted["memory"]["value"]) == (
        "created",
        "dog.name",
        "Rex",
    )
    assert extracted["memory"]["sources"] == [body["user_message"]["id"]]
    assert extracted["memory"]["authority"] == "rule-extracted"


def test_it_returns_the_same_turn_for_a_retry_and_refuses_other_content(api, conv):
    """I4: same turn_key and content → 200 and the same turn; other content → 409."""
    first = turn(api, conv, "t1", "Call me Sam.").json()
    again = turn(api, conv, "t1", "Call me Sam.")
    assert again.status_code == 200 and again.json() == first
    other = turn(api, conv, "t1", "Call me Alex.")
    assert other.status_code == 409 and other.json()["code"] == "conflict"
    assert Message.objects.filter(conversation=conv).count() == 1
    assert MemoryRecord.objects.count() == 1


def test_it_returns_the_stored_result_after_a_worker_restart(api, conv):
    """A worker that persisted the turn and died before answering: the retry returns the
    existing result, nothing is stored twice."""
    from turns.creation import turn_create

    result = turn_create(conversation_id=conv.pk, turn_key="lost", content="I live in Boston.")
    # The response was lost; the runtime retries over HTTP.
    retry = turn(api, conv, "lost", "I live in Boston.")
    assert retry.status_code == 200 and retry.json()["id"] == str(result.turn.pk)
    assert retry.json()["extracted"][0]["memory"]["value"] == "Boston"
    assert Turn.objects.count() == 1 and MemoryRecord.objects.count() == 1


@pytest.mark.parametrize(
    ("content", "field"), [("", "content"), ("x" * 100_001, "content"), ("a\x00b", "content")]
)
def test_it_refuses_bad_messages(api, conv, content, field):
    """§7: content is 1–100,000 characters; longer → 400, nothing stored."""
    r = turn(api, conv, "t1", content)
    assert r.status_code == 400 and field in r.json()["errors"]
    assert not Message.objects.exists()
