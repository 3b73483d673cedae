"""A history in the database's order, walked only as far as a plan needs (turns.history_order;
SPEC I1, I3, I6, I9, F6): for any conversation — any sizes, any withheld messages, any
boundary — a plan made from `InOrder` candidates is the plan made from the same candidates
as a plain list, which the planner dedups, sorts and walks whole: the same history, the same
`excluded` (at most 20 per reason) and `excluded_counts` (every one), the same `plan_hash`."""

from hypothesis import given, settings
from hypothesis import strategies as st

from turns.history_order import InOrder, recent, walk
from turns.left_out import LeftOut
from turns.planner import (
    QUERY_HISTORY,
    HistoryCandidate,
    PlanMessage,
    PlanParams,
    build_plan,
    recent_ids,
)

sizes = st.integers(min_value=0, max_value=400)


@st.composite
def conversations(draw):
    n = draw(st.integers(min_value=0, max_value=80))
    gaps = draw(st.lists(st.integers(min_value=1, max_value=3), min_size=n, max_size=n))
    seqs, seq = [], 0
    for gap in gaps:
        seq += gap
        seqs.append(seq)
    return [
        HistoryCandidate(
            f"m{s:04d}",
            s,
            draw(st.sampled_from(["user", "assistant"])),
            draw(sizes),
            draw(st.booleans()) and draw(st.booleans()),
        )
        for s in seqs
    ]


def plan_of(candidates, current, params):
    texts = {c.id: "t" * c.n_bytes for c in candidates}
    return build_plan(
        current=current,
        history=(),
        history_candidates=candidates,
        fetch_content=lambda ids: {i: texts[i] for i in ids},
        memories=(),
        memory_excluded=(),
        params=params,
        resolver_version="v",
    )


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    conversations(),
    st.integers(min_value=0, max_value=300),
    st.integers(min_value=20, max_value=900),
    st.sampled_from(["contiguous", "skip"]),
    st.sampled_from(["certainty", "relevance"]),
)
def test_it_plans_in_order_exactly_as_from_a_plain_list(history, boundary, budget, policy, order):
    current = PlanMessage("current", boundary, "user", "what now?")
    params = PlanParams(budget=budget, history=policy, memory_order=order)
    assert plan_of(InOrder(history), current, params) == plan_of(list(history), current, params)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(conversations(), st.integers(min_value=0, max_value=300))
def test_it_takes_the_same_recent_messages_in_order(history, boundary):
    """I6's query messages: the newest ones no forget withholds, before the boundary."""
    assert recent(InOrder(history), boundary, QUERY_HISTORY) == recent_ids(boundary, list(history))
    assert recent_ids(boundary, InOrder(history)) == recent_ids(boundary, list(history))


def test_it_stops_at_the_first_message_that_does_not_fit_and_counts_the_rest():
    """I3 `contiguous`, I9: the walk stops at the first message that does not fit; every older
    one is counted as dropped and only the newest `limit` are handed over."""
    history = InOrder(HistoryCandidate(f"m{i}", i, "user", 36) for i in range(1, 101))
    chosen, dropped, n_dropped = walk(history, available=40, policy="contiguous", limit=3)
    assert [c.id for c in chosen] == ["m98", "m99", "m100"]  # 13 tokens each
    assert [c.id for c in dropped] == ["m97", "m96", "m95"]
    assert n_dropped == 97
    left = LeftOut(limit=3)
    left.ranked_counted("message", "budget", ((c.id, c.seq) for c in dropped), n_dropped)
    assert left.counts() == (("message", "budget", 97),)
    assert left.listed() == tuple(("message", i, "budget") for i in ("m97", "m96", "m95"))


def test_it_passes_over_withheld_messages_without_counting_them_for_the_budget():
    """F6: a withheld message is neither admitted nor left out for the budget, wherever the
    walk stops."""
    history = InOrder(
        HistoryCandidate(f"m{i}", i, "user", 36, withheld=i % 2 == 0) for i in range(1, 11)
    )
    chosen, dropped, n_dropped = walk(history, available=30, policy="skip", limit=20)
    assert [c.id for c in chosen] == ["m7", "m9"]
    assert [c.id for c in dropped] == ["m5", "m3", "m1"]
    assert n_dropped == 3
