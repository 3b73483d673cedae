"""SPEC F6 in the pure planner: a withheld message is not a history candidate. It never enters
the history nor I6's query, both history policies go on past it, and the plan's `excluded`
lists it as {kind: "message", reason: "forgotten"}. No database."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.domain import RESOLVER_VERSION
from turns.planner import (
    HistoryCandidate,
    PlanMessage,
    PlanParams,
    build_plan,
    recent_ids,
)
from turns.tokens import estimate_message

CURRENT = PlanMessage("cur", 100, "user", "What about jazz tonight?")


def history(n: int, *, size: int = 8) -> list[PlanMessage]:
    return [
        PlanMessage(f"m{i}", i, "user" if i % 2 else "assistant", "x" * size)
        for i in range(1, n + 1)
    ]


def make(
    messages,
    *,
    withheld=(),
    budget=1000,
    policy="contiguous",
    as_candidates=False,
    order="certainty",
):
    params = PlanParams(budget=budget, history=policy, memory_order=order)
    if not as_candidates:
        return build_plan(
            current=CURRENT,
            history=messages,
            memories=[],
            memory_excluded=[],
            params=params,
            resolver_version=RESOLVER_VERSION,
            withheld=set(withheld),
        )
    by_id = {m.id: m for m in messages}
    candidates = [
        HistoryCandidate(m.id, m.seq, m.role, len(m.content.encode()), m.id in withheld)
        for m in messages
    ]
    return build_plan(
        current=CURRENT,
        history=(),
        history_candidates=candidates,
        fetch_content=lambda ids: {i: by_id[i].content for i in ids},
        memories=[],
        memory_excluded=[],
        params=params,
        resolver_version=RESOLVER_VERSION,
    )


@pytest.mark.parametrize("as_candidates", [False, True])
def test_it_excludes_a_withheld_message_as_forgotten(as_candidates):
    p = make(history(4), withheld={"m2"}, as_candidates=as_candidates)
    assert [m.id for m, _ in p.history] == ["m1", "m3", "m4"]
    assert ("message", "m2", "forgotten") in p.excluded
    assert [e for e in p.excluded if e[0] == "message"] == [("message", "m2", "forgotten")]


@pytest.mark.parametrize("as_candidates", [False, True])
def test_it_goes_on_contiguous_past_a_withheld_message_that_would_not_fit(as_candidates):
    """A withheld message takes no room: `contiguous` does not stop at it."""
    messages = history(3)
    messages[1] = PlanMessage("m2", 2, "assistant", "y" * 10_000)
    p = make(messages, withheld={"m2"}, budget=200, as_candidates=as_candidates)
    assert [m.id for m, _ in p.history] == ["m1", "m3"]
    assert ("message", "m2", "budget") not in p.excluded


def test_it_plans_as_if_the_withheld_message_were_not_there():
    """Apart from `excluded`, a plan with a withheld message is the plan without it: the same
    history and the same `plan_hash`."""
    messages = history(6)
    held = make(messages, withheld={"m3", "m5"}, budget=120)
    gone = make([m for m in messages if m.id not in {"m3", "m5"}], budget=120)
    assert held.history == gone.history and held.plan_hash == gone.plan_hash


def test_it_never_lists_the_current_message_or_what_lies_after_it():
    """Outside the turn boundary (I1) nothing is `excluded`, withheld or not."""
    later = PlanMessage("later", 200, "user", "after")
    p = make([*history(2), later], withheld={"later", "cur"})
    assert ("message", "later", "forgotten") not in p.excluded
    assert ("message", "cur", "forgotten") not in p.excluded


def test_it_skips_withheld_messages_in_the_relevance_query():
    """I6: the query's last 2 history messages are the last 2 that are not withheld."""
    candidates = [
        HistoryCandidate(f"m{i}", i, "user", 4, withheld=i in (4, 5)) for i in range(1, 6)
    ]
    assert recent_ids(100, candidates) == ["m3", "m2"]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 12),
    st.sets(st.integers(1, 12)),
    st.integers(30, 400),
    st.sampled_from(["contiguous", "skip"]),
)
def test_it_gives_the_same_plan_from_both_ways_of_reading_withheld(n, held_seqs, budget, policy):
    """Candidates marked withheld (the database's read) and ids passed in `withheld` give the
    same plan, and no withheld message ever enters the history."""
    messages = [PlanMessage(f"m{i}", i, "user", "w" * (i * 3)) for i in range(1, n + 1)]
    withheld = {f"m{i}" for i in held_seqs if i <= n}
    if estimate_message(CURRENT.content) > budget:
        return
    a = make(messages, withheld=withheld, budget=budget, policy=policy)
    b = make(messages, withheld=withheld, budget=budget, policy=policy, as_candidates=True)
    assert a.history == b.history and a.excluded == b.excluded and a.plan_hash == b.plan_hash
    assert not {m.id for m, _ in a.history} & withheld
    assert {i for kind, i, reason in a.excluded if reason == "forgotten"} == withheld
