"""SPEC F7.1 and F7.6 in the pure core, no database: the plan step refuses a current message a
forget withholds (naming its id, never its text, before anything is read or decided), and
the relevance terms a process holds are keyed by record id yet answer exactly what a fresh
computation answers, whatever labels and keys the same ids come back with."""

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.errors import MessageWithheld
from memory.domain import Projection, Resolution
from tests.turns.core.relevance_builders import mem
from turns import relevance
from turns.pipeline import plan_prompt
from turns.planner import HistoryCandidate, PlanMessage, PlanParams

NOW = datetime(2026, 12, 1, tzinfo=UTC)
texts = st.text(min_size=1, max_size=40)


def _plan(current: PlanMessage, withheld: bool, calls: list):
    def fetch(ids):
        calls.append(("fetch", ids))
        return {i: "earlier" for i in ids}

    def decide():
        calls.append(("decide",))
        return []

    return plan_prompt(
        current=current,
        history=[HistoryCandidate("h1", 1, "user", 7, False)],
        fetch_content=fetch,
        resolution=Resolution(active=(), excluded=(), trace={}),
        projection=Projection(prompt=(), excluded=()),
        params=PlanParams(budget=4000, memory_order="relevance"),
        pinned=frozenset(),
        use=True,
        now=NOW,
        decide=decide,
        described=lambda d: d,
        current_withheld=withheld,
    )


@settings(max_examples=50)
@given(content=texts, message_id=st.uuids().map(str))
def test_it_refuses_a_withheld_current_message_before_reading_or_deciding(content, message_id):
    """F7.1: `current_withheld` raises `MessageWithheld` (409 `message_withheld`) carrying the
    message's id and no word of it; neither the history's texts nor the decisions are asked."""
    calls: list = []
    with pytest.raises(MessageWithheld) as refused:
        _plan(PlanMessage(message_id, 5, "user", content), True, calls)
    assert (refused.value.status, refused.value.code) == (409, "message_withheld")
    assert refused.value.message_id == message_id
    assert refused.value.extra == {} and calls == []
    assert refused.value.detail == (
        "The turn's message is withheld by a forget: no prompt plan holds it."
    )


@settings(max_examples=25)
@given(content=texts)
def test_it_plans_a_current_message_no_forget_withholds(content):
    """F7.1 refuses only the withheld: otherwise the plan holds the message as it is."""
    calls: list = []
    planned = _plan(PlanMessage("m5", 5, "user", content), False, calls)
    assert planned.plan.current.content == content and ("decide",) in calls


words = st.sampled_from(["garden", "priya", "acme", "moth", "letter", "basil", "oslo"])


@settings(max_examples=50)
@given(
    rounds=st.lists(
        st.lists(st.tuples(st.integers(0, 4), words, words, words), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    ),
    query=st.lists(words, min_size=1, max_size=4),
)
def test_it_scores_by_record_id_as_a_fresh_computation_does(rounds, query):
    """F7.6: the label and key terms held per record id are used only for the label and key
    they were made of — the same ids with other labels or keys (a registry's new label, a
    test's reuse of ids) score as `bm25_scores` over freshly made documents, as do terms made
    afresh (no holder) — and `clear` leaves nothing held."""
    held = relevance.LabelTerms(size=3)
    for memories in rounds:
        made = {}
        for n, label, key, value in memories:
            made[f"r{n}"] = mem(f"r{n}", value, key=f"{key}.name", label=label)
        shown = list(made.values())
        _, scores = relevance.relevance_order(shown, query, (), held)
        fresh = relevance.bm25_scores(query, [relevance.document_terms(pm) for pm in shown])
        assert scores == fresh
        assert relevance.relevance_order(shown, query, ())[1] == fresh
    held.clear()
    assert held.held_texts() == []
