"""SPEC F7.1, the turn's own message: when a forget withholds a turn's user message (the turn
was created before the forget), no plan holds it — `GET /turns/{id}/prompt-plan` and a
replayed creation with a `plan` answer 409 `message_withheld`, naming the turn and never the
text — and a reply committed to that turn is committed withheld and answered with
`"withheld": true, "content": null`, so the next plan's history holds no answer to a forgotten
question. Through the API, as the runtime meets it."""

import pytest

from memory.models import Withholding
from tests.memory.test_withholding import active_id, forget, forgotten_messages, plan, reply, turn

pytestmark = pytest.mark.django_db

MOTH = "Miso chased a moth today."


@pytest.fixture
def moth(api, sam, conv):
    """The issue's repro: the cat's name, the companion's answer, then a new turn mentioning
    the name with no reply yet; then the cat's name is forgotten (two messages withheld: the
    one that taught it and the open turn's)."""
    t1 = turn(api, conv, "t1", "My cat is called Miso.")
    reply(api, t1["id"], "Lovely name.")
    t2 = turn(api, conv, "t2", MOTH)
    tombstone = forget(api, active_id(sam, "cat.name"))
    assert tombstone["withheld_messages"] == 2
    return {"turn": t2, "tombstone": tombstone}


def _refused(response, turn_id):
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "message_withheld" and body["type"] == "/problems/message_withheld"
    assert body["turn"] == turn_id
    assert "Miso" not in response.content.decode() and "moth" not in response.content.decode()


def test_it_refuses_the_plan_of_a_turn_whose_message_is_withheld(api, moth):
    """F7.1: `GET /turns/{id}/prompt-plan` of the open turn answers 409 `message_withheld`,
    naming the turn, never the text — whatever the plan's parameters."""
    turn_id = moth["turn"]["id"]
    _refused(api.get(f"/api/v1/turns/{turn_id}/prompt-plan", {"budget": 4000}), turn_id)
    _refused(
        api.get(
            f"/api/v1/turns/{turn_id}/prompt-plan",
            {"budget": 4000, "memory_order": "relevance", "history": "skip"},
        ),
        turn_id,
    )


def test_it_refuses_the_plan_of_a_replayed_creation(api, conv, moth):
    """F7.1 (overriding I7's "a replayed creation answers a plan computed now"): the same key
    and content with a `plan` answer 409 `message_withheld`; without a plan the replay still
    answers the turn (200), and nothing new is stored."""
    turn_id = moth["turn"]["id"]
    body = {"turn_key": "t2", "content": MOTH}
    url = f"/api/v1/conversations/{conv.pk}/turns"
    _refused(api.post(url, {**body, "plan": {"budget": 4000}}, format="json"), turn_id)
    again = api.post(url, body, format="json")
    assert again.status_code == 200 and again.json()["id"] == turn_id


def test_it_commits_a_reply_to_that_turn_withheld(api, sam, conv, moth):
    """F7.1 with F6.3: the reply committed after the forget is stored withheld (a hold on its
    turn), answered with `withheld: true` and `content: null` (a replay too), and the next
    plan's history does not hold it: it is excluded as `forgotten`."""
    turn_id = moth["turn"]["id"]
    assert Withholding.objects.filter(turn_id=turn_id).count() == 1
    r = api.post(
        f"/api/v1/turns/{turn_id}/reply", {"content": "Miso is a great hunter."}, format="json"
    )
    assert r.status_code == 201, r.content
    answer = r.json()["message"]
    assert (answer["withheld"], answer["content"], answer["role"]) == (True, None, "assistant")
    again = api.post(
        f"/api/v1/turns/{turn_id}/reply", {"content": "Miso is a great hunter."}, format="json"
    )
    assert again.status_code == 200
    assert again.json() == {"message": answer, "replayed": True}
    later = plan(api, turn(api, conv, "t3", "What should I cook tonight?")["id"])
    assert answer["id"] not in [m["id"] for m in later["history"]]
    assert answer["id"] in forgotten_messages(later)
    assert "Miso" not in str(later)


def test_it_answers_a_reply_to_an_untouched_turn_with_its_words(api, sam, conv, moth):
    """F7.1 withholds only what a forget touched: a turn created after the forget (its message
    cannot be withheld by it) plans and takes its reply as before."""
    later = turn(api, conv, "t3", "It rained all day.", plan={"budget": 4000})
    assert later["plan"]["current_message"]["content"] == "It rained all day."
    assert plan(api, later["id"])["turn"] == later["id"]
    answer = reply(api, later["id"], "Stay dry!")
    assert (answer["withheld"], answer["content"]) == (False, "Stay dry!")


def test_it_plans_the_turn_again_once_the_forget_is_undone(api, sam, conv, moth):
    """F4 with F7.1: undo releases the turn's message, so its plan is answered again, and a
    reply then committed is not withheld."""
    turn_id = moth["turn"]["id"]
    assert api.delete(f"/api/v1/tombstones/{moth['tombstone']['id']}").status_code == 204
    body = plan(api, turn_id)
    assert body["current_message"]["content"] == MOTH
    answer = reply(api, turn_id, "What a hunter.")
    assert (answer["withheld"], answer["content"]) == (False, "What a hunter.")


def test_it_withholds_a_reply_already_committed_after_the_forget(api, sam, conv):
    """F6.3 with F7.1, the reply that arrived first: a turn created before the forget whose
    reply was committed after `forgotten_at` — stored when the forget runs — is withheld by
    the forget when its own message is, though the reply mentions nothing forgotten."""
    from conversations.models import Message
    from memory.forgetting import forget_key

    turn(api, conv, "t1", "My cat is called Miso.")
    t2 = turn(api, conv, "t2", MOTH)
    answer = reply(api, t2["id"], "Fun!")
    # The reply's time after the forget's, as when the reply's commit raced it.
    Message.objects.filter(pk=answer["id"]).update(created_at="2100-01-01T00:00:00Z")
    tombstone = forget_key(user=sam, key="cat.name", scope_id="*")
    assert Withholding.objects.filter(tombstone=tombstone, message_id=answer["id"]).exists()
