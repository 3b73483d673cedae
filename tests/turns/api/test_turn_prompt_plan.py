"""`GET /turns/{id}/prompt-plan` (SPEC §7: I1–I5) through the API: the history before the turn,
the budget, evidence, the plan hash and the decisions it carries."""

import datetime as dt

import pytest

from conversations.models import Turn
from tests.factories import MessageFactory
from tests.helpers import ON_POSTGRES
from tests.turns.api.calls import plan, seed_history_and_memories, turn

pytestmark = pytest.mark.django_db


def test_it_plans_history_strictly_before_the_turn_with_the_current_message_once(api, conv):
    """I1: history holds only lower seqs and never the current message, which appears once
    — even though it was saved before the plan was asked for (the save-and-retrieve race)."""
    for i in range(3):
        MessageFactory(conversation=conv, content=f"earlier {i}")
    t = turn(api, conv, "t1", "Now this.").json()
    later = MessageFactory(conversation=conv, content="after the turn")
    body = plan(api, t["id"]).json()
    assert body["current_message"]["id"] == t["user_message"]["id"]
    ids = [m["id"] for m in body["history"]]
    assert t["user_message"]["id"] not in ids and str(later.pk) not in ids
    assert [m["seq"] for m in body["history"]] == [1, 2, 3]
    assert body["boundary_seq"] == t["user_message"]["seq"]
    assert body["estimated_tokens"] <= body["budget"]


def test_it_puts_only_the_replacement_in_every_later_plan(api, conv):
    """I2: after a correction the plan holds the replacement, never the replaced value."""
    turn(api, conv, "t1", "The basil plant is named Harbor.")
    turn(api, conv, "t2", "I renamed the basil plant. It is Marlowe now, not Harbor.")
    for key in ("t3", "t4"):
        t = turn(api, conv, key, "How is it doing?").json()
        memories = plan(api, t["id"]).json()["memories"]
        assert [m["value"] for m in memories if m["key"] == "basil_plant.name"] == ["Marlowe"]
        assert all("Harbor" not in m["value"] for m in memories)


@pytest.mark.parametrize("policy", ["contiguous", "skip"])
def test_it_keeps_a_huge_recent_message_out_within_budget(api, conv, policy):
    """I3: one huge recent message; the plan stays within budget under both policies;
    `contiguous` stops there, `skip` continues past it."""
    MessageFactory(conversation=conv, content="old and small")
    huge = MessageFactory(conversation=conv, content="x" * 40_000)
    t = turn(api, conv, "t1", "hello").json()
    body = plan(api, t["id"], budget=500, history=policy).json()
    assert body["estimated_tokens"] <= 500
    assert {"kind": "message", "id": str(huge.pk), "reason": "budget"} in body["excluded"]
    contents = [m["content"] for m in body["history"]]
    assert contents == ([] if policy == "contiguous" else ["old and small"])


def test_it_fits_many_tiny_messages_newest_first_and_returns_them_oldest_first(api, conv):
    """I3: history fills newest-first and is returned oldest-first."""
    for i in range(200):
        MessageFactory(conversation=conv, content=f"m{i}")
    t = turn(api, conv, "t1", "hi").json()
    body = plan(api, t["id"], budget=100, memory_share=0).json()
    seqs = [m["seq"] for m in body["history"]]
    assert seqs == sorted(seqs) and seqs[-1] == 200
    assert body["estimated_tokens"] <= 100
    assert (
        sum(m["estimated_tokens"] for m in body["history"])
        + body["current_message"]["estimated_tokens"]
        == body["estimated_tokens"]
    )


def test_it_orders_messages_with_equal_timestamps_by_seq(api, conv):
    """§7: ordering never relies on timestamps alone."""
    same = dt.datetime(2026, 8, 5, 12, tzinfo=dt.UTC)
    a = MessageFactory(conversation=conv, content="first", created_at=same)
    b = MessageFactory(conversation=conv, content="second", created_at=same)
    t = turn(api, conv, "t1", "third").json()
    assert [m["id"] for m in plan(api, t["id"]).json()["history"]] == [str(a.pk), str(b.pk)]


@pytest.mark.parametrize(
    "content", ["🌿" * 50, "今日は温室で手紙を書きます。" * 10, "```python\nprint('hi')\n```"]
)
def test_it_never_undercounts_emoji_cjk_or_code(api, conv, content):
    """I3: estimates are from UTF-8 bytes, so emoji and CJK are never under-counted."""
    t = turn(api, conv, "t1", content).json()
    current = plan(api, t["id"]).json()["current_message"]
    assert current["estimated_tokens"] == -(-len(content.encode()) // 4) + 4
    assert current["content"] == content


def test_it_plans_an_empty_conversation(api, conv):
    t = turn(api, conv, "t1", "hello").json()
    body = plan(api, t["id"]).json()
    assert body["history"] == [] and body["current_message"]["seq"] == 1


def test_it_answers_422_when_the_current_message_alone_does_not_fit(api, conv):
    """I3: budget_exceeded when the current message does not fit."""
    t = turn(api, conv, "t1", "x" * 400).json()
    r = plan(api, t["id"], budget=50)
    assert r.status_code == 422 and r.json()["code"] == "budget_exceeded"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"budget": 0}, "budget"),
        ({"budget": "many"}, "budget"),
        ({"memory_share": 2}, "memory_share"),
        ({"history": "all"}, "history"),
        ({"capabilities": "tone.sarcastic"}, "capabilities"),
        ({"now": "soon"}, "now"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_it_refuses_bad_plan_parameters(api, conv, params, field):
    t = turn(api, conv, "t1", "hi").json()
    r = plan(api, t["id"], **params)
    assert r.status_code == 400 and field in r.json()["errors"], r.json()


def test_it_excludes_an_invented_outcome_as_unsupported(api, conv):
    """I5/P1: a summary without provenance never enters the plan as a fact."""
    made_up = api.post(
        "/api/v1/memories",
        {"user": "sam", "key": "story.letter.outcome", "value": "sent", "scope": {"kind": "user"}},
        format="json",
    ).json()["memory"]
    t = turn(api, conv, "t1", "Did I send it?").json()
    body = plan(api, t["id"]).json()
    assert all(m["key"] != "story.letter.outcome" for m in body["memories"])
    assert {"kind": "memory", "id": made_up["id"], "reason": "unsupported"} in body["excluded"]


def test_it_marks_uncertain_memories(api, conv):
    """I5: uncertain memory is marked `uncertain`."""
    msg = MessageFactory(conversation=conv)
    api.post(
        "/api/v1/memories",
        {
            "user": "sam",
            "key": "story.letter.status",
            "value": "unfinished",
            "scope": {"kind": "user"},
            "confidence": 0.6,
            "sources": [str(msg.pk)],
        },
        format="json",
    )
    t = turn(api, conv, "t1", "Where were we?").json()
    [memory] = plan(api, t["id"]).json()["memories"]
    assert memory == {
        "key": "story.letter.status",
        "label": "Story letter: status",
        "value": "unfinished",
        "certainty": "uncertain",
        "scope": {"kind": "user"},
        "relevance": None,
    }


def test_it_gives_the_same_hash_for_the_same_state_and_keeps_a_textless_snapshot(api, conv):
    """I3: same state and parameters → same plan_hash; the turn keeps ids and hash only."""
    MessageFactory(conversation=conv, content="a private sentence")
    t = turn(api, conv, "t1", "another private sentence").json()
    first = plan(api, t["id"], now="2030-01-01T00:00:00Z").json()
    second = plan(api, t["id"], now="2030-01-02T00:00:00Z").json()
    assert first["plan_hash"] == second["plan_hash"]
    assert plan(api, t["id"], budget=1999).json()["plan_hash"] != first["plan_hash"]
    stored = Turn.objects.get(pk=t["id"])
    assert stored.plan_hash and "private" not in str(stored.plan_snapshot)
    assert stored.plan_snapshot["current"] == t["user_message"]["id"]


def test_it_includes_policy_decisions_for_requested_capabilities(api, conv):
    t = turn(api, conv, "t1", "hi").json()
    body = plan(api, t["id"], capabilities="tone.playful,media.voice").json()
    assert [(d["effect"], d["reason"]) for d in body["policy"]] == [
        ("ask", "no-applicable-rule")
    ] * 2


def test_it_answers_404_for_unknown_turns(api, conv):
    import uuid

    assert api.get(f"/api/v1/turns/{uuid.uuid4()}/prompt-plan", {"budget": 100}).status_code == 404
    assert (
        api.post(f"/api/v1/turns/{uuid.uuid4()}/reply", {"content": "x"}, format="json").status_code
        == 404
    )
    assert (
        api.post(
            f"/api/v1/conversations/{uuid.uuid4()}/turns",
            {"turn_key": "a", "content": "x"},
            format="json",
        ).status_code
        == 404
    )


@pytest.mark.parametrize("n", [10, 1000])
def test_it_plans_in_a_constant_number_of_queries(api, conv, sam, n, django_assert_num_queries):
    """DESIGN: the prompt plan's query count does not grow with messages or memories."""
    seed_history_and_memories(
        sam, conv, n, message_text=lambda i: f"m{i}", memory_value=lambda i: f"v{i}"
    )
    t = turn(api, conv, "t1", "hi").json()
    # The token, the turn, the read (memory state, history, rules and their version: one
    # statement), the write (snapshot and decision log: one statement on PostgreSQL, one per
    # table on SQLite; turns.turn_path). The first plan of a process also loads the catalog
    # data it does not hold yet (config.catalog: the capabilities, the product defaults and
    # their version: three queries; the key registry came with the turn's creation).
    warm = 4 if ON_POSTGRES else 5
    with django_assert_num_queries(warm + 3):
        plan(api, t["id"], budget=500, now="2030-01-01T00:00:00Z", capabilities="tone.playful")
    with django_assert_num_queries(warm):
        r = plan(api, t["id"], budget=500, now="2030-01-01T00:00:00Z", capabilities="tone.playful")
    assert r.status_code == 200


def test_it_withholds_a_memory_only_in_the_conversations_the_forget_reaches_f7_2(
    api, sam, conv, rowan
):
    """F7.2 with F6's mapping: a forget in Rowan's scope withholds the user's routine naming
    Priya in a plan of the conversation with Rowan, not in one with another character."""
    from tests.factories import CharacterFactory, ConversationFactory
    from tests.memory.api.calls import assert_memory, forget, priya

    other = ConversationFactory(user=sam, character=CharacterFactory(slug="other"))
    ids = priya(api)
    sister = assert_memory(
        api,
        key="family.sister.name",
        value="Priya",
        authority="user-confirmed",
        scope={"kind": "character", "character": rowan.slug},
    ).json()["memory"]["id"]
    forget(api, sister)
    here = plan(api, turn(api, conv, "t1", "Hello").json()["id"]).json()
    there = plan(api, turn(api, other, "t1", "Hello").json()["id"]).json()
    reasons = {e["id"]: e["reason"] for e in here["excluded"] if e["kind"] == "memory"}
    assert reasons[ids["visits"]] == "withheld"
    assert "visiting Priya on Sundays" not in [m["value"] for m in here["memories"]]
    assert "visiting Priya on Sundays" in [m["value"] for m in there["memories"]]
    assert ids["visits"] not in [e["id"] for e in there["excluded"]]
