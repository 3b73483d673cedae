"""Property-based tests of the pure prompt planner (SPEC §7 I1, I3), with Hypothesis: random
conversations, memories, budgets and shares hold the plan's invariants. No database."""

import math

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from config.errors import BudgetExceeded
from memory.domain import RESOLVER_VERSION
from tests.turns.core.planner_builders import excluded_messages, history_ids, mem
from turns.planner import (
    PlanMessage,
    PlanParams,
    build_plan,
    memory_cap,
)
from turns.tokens import estimate_memory, estimate_message

content_strategy = st.one_of(
    st.text(max_size=30),
    st.builds(
        lambda chunk, n: chunk * n,
        st.sampled_from(["x", "é", "漢", "😀", "```\n\t"]),
        st.integers(0, 300),
    ),
)


messages_strategy = st.lists(
    st.tuples(st.integers(0, 60), content_strategy, st.sampled_from(["user", "assistant"])),
    max_size=25,
    unique_by=lambda t: t[0],
)


memories_strategy = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=12),
        st.text(max_size=40),
        st.sampled_from(["confirmed", "likely", "uncertain"]),
    ),
    max_size=6,
)


def _reference_memory_tokens(memories, cap):
    used = 0
    for pm in memories:
        cost = estimate_memory(pm.label, pm.value)
        if used + cost <= cap:
            used += cost
    return used


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    raw_history=messages_strategy,
    raw_memories=memories_strategy,
    current_seq=st.integers(0, 70) | st.just(61),
    current_content=st.text(max_size=40),
    include_current=st.booleans(),
    budget=st.integers(1, 200),
    share=st.floats(0, 0.6),
    policy=st.sampled_from(["contiguous", "skip"]),
    data=st.data(),
)
def test_it_holds_the_invariants_for_random_conversations(
    raw_history,
    raw_memories,
    current_seq,
    current_content,
    include_current,
    budget,
    share,
    policy,
    data,
):
    """I1 + I3: for any history and budget the plan stays within budget, its history is
    oldest-first with strictly increasing seq below the current message, the current message
    is there exactly once, and the plan is deterministic and independent of input order. I9:
    every eligible message is either in the history or counted as left out for the budget,
    and at most 20 of those are listed."""
    history = [PlanMessage(f"m{seq}", seq, role, text) for seq, text, role in raw_history]
    current = PlanMessage("cur", current_seq, "user", current_content)
    if include_current:
        history.append(current)
    memories = [
        mem(f"r{i}", value, key=f"k.k{i}", label=label, certainty=certainty)
        for i, (label, value, certainty) in enumerate(raw_memories)
    ]
    params = PlanParams(budget=budget, memory_share=share, history=policy)

    def run(hist):
        return build_plan(
            current=current,
            history=hist,
            memories=memories,
            memory_excluded=[],
            params=params,
            resolver_version=RESOLVER_VERSION,
        )

    memory_tokens = _reference_memory_tokens(memories, memory_cap(params))
    if estimate_message(current_content) > budget - memory_tokens:
        event("budget exceeded")
        with pytest.raises(BudgetExceeded):
            run(history)
        return

    p = run(history)
    shuffled = run(data.draw(st.permutations(history)))
    assert p == run(list(history)) == shuffled

    assert p.estimated_tokens <= budget
    assert p.memory_tokens == memory_tokens <= math.floor(share * budget)
    assert p.estimated_tokens == (p.memory_tokens + p.current_tokens + sum(t for _, t in p.history))
    seqs = [m.seq for m, _ in p.history]
    assert seqs == sorted(set(seqs))
    assert all(s < current_seq for s in seqs)
    assert [p.current.id, *history_ids(p)].count("cur") == 1

    eligible = sorted(m.id for m in history if m.seq < current_seq and m.id != "cur")
    listed = excluded_messages(p)
    left_out = dict(((kind, reason), n) for kind, reason, n in p.excluded_counts)
    assert len(history_ids(p)) + left_out.get(("message", "budget"), 0) == len(eligible)
    assert len(listed) == min(20, left_out.get(("message", "budget"), 0))
    assert sorted(set(history_ids(p)) | set(listed)) == sorted(history_ids(p) + listed)
    assert set(listed) <= set(eligible)
    remaining = budget - p.estimated_tokens
    by_id = {m.id: m for m in history}
    dropped = [by_id[i] for i in excluded_messages(p)]
    event(f"{policy}: history {bool(p.history)}, dropped {bool(dropped)}")
    if policy == "skip":
        assert all(estimate_message(m.content) > remaining for m in dropped)
    elif dropped:
        newest_dropped = max(dropped, key=lambda m: m.seq)
        assert estimate_message(newest_dropped.content) > remaining
        assert all(m.seq > newest_dropped.seq for m, _ in p.history)
