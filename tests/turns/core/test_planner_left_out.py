"""SPEC §7 I9 in the pure planner: a plan is bounded by what it holds. For each (kind, reason)
`excluded` lists at most 20 entries — messages newest first; memories in the fill order the
plan used (I3, or I6 under `relevance`) for `budget`, by id for every other reason — and
`excluded_counts` counts every one, sorted by kind then reason. Hypothesis compares the plan
with a slow reference that sorts everything left out; no database."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.domain import RESOLVER_VERSION, Exclusion
from tests.turns.core.planner_builders import mem
from turns.planner import HistoryCandidate, PlanMessage, PlanParams, build_plan, plan_body
from turns.relevance import QUERY_HISTORY, query_terms, relevance_order

LISTED = 20
CURRENT_SEQ = 1000
# The resolver's and projection's reasons, one added by a later rule and the planner's own:
# the planner treats them all alike (a reason from memory_excluded is listed by id).
REASONS = [
    "scope",
    "superseded",
    "unsupported",
    "withheld",
    "a-reason-from-later",
    "budget",
    "memory-off",
]
IDS = st.text(alphabet="0123456789abcdef", min_size=6, max_size=6)
RECENT = ["we talked about jazz and the basil plant", "the letter to Rowan"]
WORDS = ["jazz", "basil", "letter", "tea", "Rowan", "plant", "x" * 30]
CURRENT = PlanMessage("cur", CURRENT_SEQ, "user", "How is the basil plant?")
PINNED = frozenset({"fact.k3"})


@st.composite
def worlds(draw):
    """A conversation of up to 60 earlier messages (ids that do not sort by seq), some
    withheld, up to 60 projected memories and up to 60 earlier exclusions (repeats allowed),
    and plan parameters that leave many of each out."""
    n_messages = draw(st.integers(0, 60))
    message_ids = draw(st.lists(IDS, min_size=n_messages, max_size=n_messages, unique=True))
    seqs = sorted(
        draw(st.sets(st.integers(1, CURRENT_SEQ + 5), min_size=n_messages, max_size=n_messages))
    )
    messages = [
        PlanMessage(i, seq, "user" if seq % 2 else "assistant", "word " * draw(st.integers(0, 40)))
        for i, seq in zip(message_ids, seqs, strict=True)
    ]
    withheld = draw(st.sets(st.sampled_from(message_ids), max_size=30)) if message_ids else set()
    n_memories = draw(st.integers(0, 60))
    memory_ids = draw(st.lists(IDS, min_size=n_memories, max_size=n_memories, unique=True))
    memories = [
        mem(
            record_id,
            " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))),
            key=f"fact.k{index}",
            label=f"Fact {index}",
            certainty=draw(st.sampled_from(["confirmed", "likely", "uncertain"])),
        )
        for index, record_id in enumerate(memory_ids)
    ]
    excluded_ids = draw(st.lists(IDS, max_size=60)) + draw(
        st.lists(st.sampled_from(memory_ids), max_size=5) if memory_ids else st.just([])
    )
    memory_excluded = [
        (i, draw(st.sampled_from(REASONS))) if draw(st.booleans()) else Exclusion(i, "scope")
        for i in excluded_ids
    ]
    params = PlanParams(
        budget=draw(st.integers(60, 1500)),
        memory_share=draw(st.sampled_from([0.0, 0.1, 0.3, 0.6])),
        history=draw(st.sampled_from(["contiguous", "skip"])),
        memory_order=draw(st.sampled_from(["certainty", "relevance"])),
    )
    use = draw(st.booleans())
    return messages, withheld, memories, memory_excluded, params, use


def plan_of(world, *, messages=None, memory_excluded=None, as_candidates=False):
    all_messages, withheld, memories, excluded, params, use = world
    messages = all_messages if messages is None else messages
    common = {
        "current": CURRENT,
        "memories": memories,
        "memory_excluded": excluded if memory_excluded is None else memory_excluded,
        "params": params,
        "resolver_version": RESOLVER_VERSION,
        "pinned_keys": PINNED,
        "recent": RECENT,
        "use_memories": use,
    }
    if not as_candidates:
        return build_plan(history=messages, withheld=withheld, **common)
    contents = {m.id: m.content for m in messages}
    candidates = [
        HistoryCandidate(m.id, m.seq, m.role, len(m.content.encode()), m.id in withheld)
        for m in messages
    ]
    return build_plan(
        history=(),
        history_candidates=candidates,
        fetch_content=lambda ids: {i: contents[i] for i in ids},
        **common,
    )


def reference(world, plan) -> dict[tuple[str, str], list[str]]:
    """The slow reference: everything left out, each (kind, reason) fully sorted by its rule.
    The planner's own `budget` memories keep their place in the fill order; one an earlier
    step handed over under `budget` comes after them, by id."""
    messages, withheld, memories, memory_excluded, params, use = world
    groups: dict[tuple[str, str], list[str]] = {}
    given = {m.id for m, _ in plan.history}
    newest_first = sorted(
        (m for m in messages if m.seq < CURRENT_SEQ), key=lambda m: (m.seq, m.id), reverse=True
    )
    groups["message", "forgotten"] = [m.id for m in newest_first if m.id in withheld]
    groups["message", "budget"] = [
        m.id for m in newest_first if m.id not in withheld and m.id not in given
    ]
    earlier: dict[str, set[str]] = {}
    for item in memory_excluded:
        record_id, reason = (item.id, item.reason) if isinstance(item, Exclusion) else item
        earlier.setdefault(reason, set()).add(record_id)
    own_budget: list[str] = []
    if use:
        fill = list(range(len(memories)))
        if params.memory_order == "relevance" and memories:
            query = query_terms(CURRENT.content, RECENT[:QUERY_HISTORY])
            fill, _ = relevance_order(memories, query, PINNED)
        held = {pm.record.id for pm in plan.memories}
        own_budget = [memories[i].record.id for i in fill if memories[i].record.id not in held]
    else:
        earlier.setdefault("memory-off", set()).update(pm.record.id for pm in memories)
    earlier_budget = earlier.pop("budget", set())
    groups["memory", "budget"] = own_budget + sorted(earlier_budget - set(own_budget))
    for reason, ids in earlier.items():
        groups["memory", reason] = sorted(ids)
    return {key: ids for key, ids in groups.items() if ids}


@settings(max_examples=150, deadline=None, derandomize=True)
@given(world=worlds())
def test_it_lists_the_first_20_of_each_reason_in_its_order_and_counts_all(world):
    """I9: `excluded` is, per (kind, reason) sorted, the first 20 of a full sort by the rule's
    order; `excluded_counts` the full totals, sorted by kind then reason."""
    plan = plan_of(world)
    full = reference(world, plan)
    assert plan.excluded == tuple(
        (kind, item_id, reason)
        for (kind, reason), ids in sorted(full.items())
        for item_id in ids[:LISTED]
    )
    assert plan.excluded_counts == tuple(
        (kind, reason, len(ids)) for (kind, reason), ids in sorted(full.items())
    )


@settings(max_examples=100, deadline=None, derandomize=True)
@given(world=worlds(), data=st.data())
def test_it_plans_the_same_whatever_order_the_inputs_come_in(world, data):
    """I9 with I3: determinism and order independence — the history, the withheld ids and the
    earlier exclusions shuffled, or the history given as sized candidates, give the same plan,
    bounded lists and counts included."""
    messages, _, _, memory_excluded, _, _ = world
    plan = plan_of(world)
    assert plan == plan_of(world)
    shuffled = plan_of(
        world,
        messages=data.draw(st.permutations(messages)),
        memory_excluded=data.draw(st.permutations(memory_excluded)),
    )
    assert shuffled == plan
    assert plan_of(world, as_candidates=True) == plan


def test_it_renders_the_bound_and_the_counts_in_the_plan_body():
    """I9, §10: the plan JSON's `excluded` holds 20 of the 45 messages left out, newest first,
    and `excluded_counts` the 45."""
    messages = [PlanMessage(f"m{seq:02d}", seq, "user", "x" * 400) for seq in range(1, 46)]
    plan = build_plan(
        current=PlanMessage("cur", 46, "user", "hi"),
        history=messages,
        memories=[],
        memory_excluded=[],
        params=PlanParams(budget=50, memory_share=0),
        resolver_version=RESOLVER_VERSION,
    )
    body = plan_body(plan)
    assert body["excluded"] == [
        {"kind": "message", "id": f"m{seq:02d}", "reason": "budget"} for seq in range(45, 25, -1)
    ]
    assert body["excluded_counts"] == [{"kind": "message", "reason": "budget", "count": 45}]


@pytest.mark.parametrize("order", ["certainty", "relevance"])
def test_it_keeps_the_plan_hash_whatever_is_left_out(order):
    """I9: `plan_hash` covers what the plan holds, not what it left out: 5 or 500 memories
    left out for other reasons give the same hash."""

    def run(n):
        return build_plan(
            current=PlanMessage("cur", 2, "user", "hi"),
            history=[PlanMessage("m1", 1, "user", "hello")],
            memories=[mem("r1")],
            memory_excluded=[(f"x{i:03d}", "scope") for i in range(n)],
            params=PlanParams(budget=500, memory_order=order),
            resolver_version=RESOLVER_VERSION,
        )

    few, many = run(5), run(500)
    assert few.plan_hash == many.plan_hash
    assert few.excluded_counts == (("memory", "scope", 5),)
    assert many.excluded_counts == (("memory", "scope", 500),)
    assert len(many.excluded) == LISTED
