"""The history a process holds per conversation (turns.held_history, docs/DESIGN.md "The
turn's state"), through the API on PostgreSQL where a turn catches it up: each one round trip
(I7) reads only the messages after the held ones and answers the plan a fresh read gives —
`GET /turns/{id}/prompt-plan` with the same parameters, made here with no held history, so it
reads the whole history — under
a forget made after the history was held (F6), its undo (F4), a larger room than the held
texts cover (I3), and a held message the database no longer has as it was."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Conversation, Message
from memory.models import MemoryRecord
from tests.helpers import ON_POSTGRES
from tests.turns.api.reads import reply, turn
from turns.storage import HELD_HISTORIES

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not ON_POSTGRES, reason="a held history is caught up on PostgreSQL only"),
]


def create(api, conv, key, content, **plan):
    plan.setdefault("budget", 4000)
    return turn(api, conv, key, content, plan=plan)


def fresh_plan(api, answered, **params):
    """The GET's plan from a whole read: the process's held history of the conversation is
    set aside for it (the GET is on the same turn path) and put back after."""
    params.setdefault("budget", 4000)
    conversation = Conversation.objects.get(pk=answered["conversation"])
    held = HELD_HISTORIES.get(conversation.pk)
    HELD_HISTORIES.drop(conversation.pk)
    try:
        r = api.get(f"/api/v1/turns/{answered['id']}/prompt-plan", params)
    finally:
        if held is not None:
            HELD_HISTORIES.put(conversation.pk, held, user=conversation.user_id)
    assert r.status_code == 200, r.content
    return r.json()


def same_plan(answered: dict, fresh: dict) -> bool:
    """Equal plans: every field and the plan_hash, apart from the decisions' own log ids."""

    def strip(body):
        return {**body, "policy": [{**d, "decision_id": None} for d in body["policy"]]}

    return answered["plan_hash"] == fresh["plan_hash"] and strip(answered) == strip(fresh)


def forgotten(body) -> set[str]:
    return {
        e["id"] for e in body["excluded"] if e["kind"] == "message" and e["reason"] == "forgotten"
    }


def active_cat(conv) -> str:
    [record] = MemoryRecord.objects.filter(
        user=conv.user, key="cat.name", status="active", superseded_by__isnull=True
    )
    return str(record.pk)


def test_it_catches_each_turn_up_and_plans_what_a_fresh_read_plans(api, conv):
    """Budgets that admit all, few (`skip` and `contiguous`) and then all again: the texts
    held from a small room do not cover the large one, and its plan is still the fresh one."""
    budgets = [
        {"budget": 4000},
        {"budget": 90, "history": "skip"},
        {"budget": 90, "history": "contiguous"},
        {"budget": 4000, "memory_order": "relevance"},
        {"budget": 4000},
    ]
    before = HELD_HISTORIES.caught_up
    for i, params in enumerate(budgets):
        t = create(api, conv, f"t{i}", f"Turn {i}: the basil on the rooftop grew again.", **params)
        assert same_plan(t["plan"], fresh_plan(api, t, **params)), i
        reply(api, t["id"], f"Reply {i}: " + "so green " * (i * 8))
    assert HELD_HISTORIES.caught_up - before == len(budgets) - 1
    assert HELD_HISTORIES.reread == 0
    last = create(api, conv, "last", "And now?")
    assert len(last["plan"]["history"]) == 2 * len(budgets)


@pytest.fixture
def miso(api, conv):
    """Miso said and answered, then a turn that holds the history with its texts."""
    t1 = create(api, conv, "t1", "My cat is called Miso.")
    r1 = reply(api, t1["id"], "Miso is a lovely name for a cat!")
    t2 = create(api, conv, "t2", "The basil needs water.")
    r2 = reply(api, t2["id"], "I will remind you.")
    held = HELD_HISTORIES.get(conv.pk)
    assert "My cat is called Miso." in held.texts.values()
    return {
        "said": {t1["user_message"]["id"], r1["id"]},
        "kept": [t2["user_message"]["id"], r2["id"]],
    }


def test_it_withholds_in_the_next_turn_what_a_forget_made_after_the_history_was_held(
    api, conv, miso
):
    """F6 on a caught-up read: the held messages that mention Miso are listed as forgotten,
    their words are in neither the plan nor what the process keeps."""
    r = api.post(f"/api/v1/memories/{active_cat(conv)}/forget", {}, format="json")
    assert r.status_code == 200, r.content
    before = HELD_HISTORIES.caught_up
    t3 = create(api, conv, "t3", "How was your day?")
    assert HELD_HISTORIES.caught_up == before + 1
    assert miso["said"] <= forgotten(t3["plan"])
    assert [m["id"] for m in t3["plan"]["history"]] == miso["kept"]
    assert "Miso" not in str(t3["plan"]["history"])
    assert same_plan(t3["plan"], fresh_plan(api, t3))
    assert not any("Miso" in text for text in HELD_HISTORIES.held_texts())


def test_it_brings_the_held_messages_back_with_their_words_on_undo(api, conv, miso):
    """F4 + F6: the texts were never kept while withheld; the next caught-up turn reads them
    again and plans them as a fresh read does."""
    r = api.post(f"/api/v1/memories/{active_cat(conv)}/forget", {}, format="json")
    create(api, conv, "t3", "How was your day?")
    assert api.delete(f"/api/v1/tombstones/{r.json()['id']}").status_code == 204
    t4 = create(api, conv, "t4", "Tell me everything again.")
    contents = [m["content"] for m in t4["plan"]["history"]]
    assert contents[:2] == ["My cat is called Miso.", "Miso is a lovely name for a cat!"]
    assert forgotten(t4["plan"]) == set()
    assert same_plan(t4["plan"], fresh_plan(api, t4))
    assert HELD_HISTORIES.reread == 0


def counted_create(api, conv, key, content) -> tuple[dict, int]:
    with CaptureQueriesContext(connection) as captured:
        answered = create(api, conv, key, content)
    return answered, len(captured)


@pytest.mark.parametrize("change", ["deleted", "rewritten"])
def test_it_reads_the_history_whole_when_the_database_no_longer_has_a_held_message(
    api, conv, miso, change
):
    """A held message deleted (the conversation's trigger-kept count of removed messages
    differs: the history is read whole in the turn's one statement, no check made) or the
    newest held's row written again (its version differs: one statement more reads the
    history whole); either way the plan is the fresh one."""
    _, caught_up = counted_create(api, conv, "t3", "First.")
    if change == "deleted":
        Message.objects.filter(pk=miso["kept"][0]).delete()
        conv.refresh_from_db()
        assert conv.messages_removed == 1
    else:
        held = HELD_HISTORIES.get(conv.pk)
        Message.objects.filter(conversation=conv, seq=held.seq).update(role="user")
    rereads, caught = HELD_HISTORIES.reread, HELD_HISTORIES.caught_up
    t4, statements = counted_create(api, conv, "t4", "Second.")
    if change == "deleted":
        assert (HELD_HISTORIES.reread, HELD_HISTORIES.caught_up) == (rereads, caught)
        assert statements == caught_up
    else:
        assert HELD_HISTORIES.reread == rereads + 1
        assert statements == caught_up + 1
    assert same_plan(t4["plan"], fresh_plan(api, t4))
    if change == "deleted":
        assert miso["kept"][0] not in [m["id"] for m in t4["plan"]["history"]]
