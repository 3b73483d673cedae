"""The pure prompt planner (SPEC §7: I1 turn boundary, I3 deterministic budget, its
parameters); the plan hash and snapshot (I5) are in test_planner_hash.py, the properties in
test_planner_properties.py. No database: every input is a plain value."""

import math

import pytest

from config.errors import BudgetExceeded, ValidationError
from memory.domain import RESOLVER_VERSION, Exclusion
from tests.turns.core.planner_builders import (
    CODE_BLOCK,
    cur,
    excluded_memories,
    excluded_messages,
    history_ids,
    mem,
    msg,
    plan,
)
from turns.planner import (
    HistoryCandidate,
    PlanParams,
    build_plan,
    memory_cap,
    select_history,
)
from turns.tokens import estimate_memory, estimate_message


@pytest.mark.parametrize(
    "history",
    [
        pytest.param([msg(1), msg(2)], id="clean"),
        pytest.param([msg(1), cur(), msg(2)], id="current-passed-in-history"),
        pytest.param([msg(1), cur(seq=3), msg(2)], id="current-id-with-an-older-seq"),
        pytest.param([cur(), msg(2), cur(), msg(1)], id="current-passed-twice"),
        pytest.param(
            [msg(1), msg(2), msg(100, id="same-seq"), msg(101), msg(150)],
            id="messages-at-and-after-the-boundary",
        ),
    ],
)
@pytest.mark.parametrize("policy", ["contiguous", "skip"])
def test_it_puts_the_current_message_exactly_once(history, policy):
    """I1: the current message appears exactly once, as the active request, never in history;
    history holds only messages with a lower seq."""
    p = plan(history=history, policy=policy)
    ids = [p.current.id, *history_ids(p)]
    assert ids.count("cur") == 1
    assert p.current == cur()
    assert p.boundary_seq == 100
    assert history_ids(p) == ["m1", "m2"]
    assert all(m.seq < p.boundary_seq for m, _ in p.history)
    assert "cur" not in excluded_messages(p)


def test_it_drops_messages_outside_the_boundary_without_excluding_them():
    """I1: later messages are outside the turn, not a budget exclusion."""
    p = plan(history=[msg(1), msg(100, id="same-seq"), msg(101), msg(102)])
    assert history_ids(p) == ["m1"]
    assert p.excluded == ()


def test_it_plans_an_empty_conversation():
    """I3: no history → the plan is the current message (plus memories)."""
    p = plan(memories=[mem("r1")])
    assert p.history == ()
    assert p.estimated_tokens == p.current_tokens + p.memory_tokens
    assert p.current_tokens == estimate_message(cur().content)
    assert p.memory_tokens == estimate_memory("Plant: name", "Marlowe")


HUGE = "x" * 4000  # 1004 tokens


@pytest.mark.parametrize(
    ("policy", "history", "expected_history", "expected_excluded"),
    [
        pytest.param(
            "contiguous",
            [msg(1), msg(2), msg(3, HUGE)],
            [],
            ["m3", "m2", "m1"],
            id="contiguous-huge-newest",
        ),
        pytest.param(
            "skip", [msg(1), msg(2), msg(3, HUGE)], ["m1", "m2"], ["m3"], id="skip-huge-newest"
        ),
        pytest.param(
            "contiguous",
            [msg(1), msg(2, HUGE), msg(3), msg(4)],
            ["m3", "m4"],
            ["m2", "m1"],
            id="contiguous-huge-in-the-middle",
        ),
        pytest.param(
            "skip",
            [msg(1), msg(2, HUGE), msg(3), msg(4)],
            ["m1", "m3", "m4"],
            ["m2"],
            id="skip-huge-in-the-middle",
        ),
    ],
)
def test_it_handles_one_huge_recent_message(policy, history, expected_history, expected_excluded):
    """I3: one message larger than the whole budget: `contiguous` stops at it (it and every
    older message → budget), `skip` skips it and continues; the plan stays within budget. I9:
    the messages left out are listed newest first."""
    p = plan(history=history, budget=500, policy=policy)
    assert history_ids(p) == expected_history
    assert excluded_messages(p) == expected_excluded
    assert all(reason == "budget" for _, _, reason in p.excluded)
    assert p.estimated_tokens <= 500


@pytest.mark.parametrize("policy", ["contiguous", "skip"])
def test_it_keeps_the_newest_of_many_tiny_messages(policy):
    """I3: history fills newest-first and comes back oldest-first. I9: of the 300 messages
    left out, the plan counts 300 and lists the newest 20, newest first."""
    history = [msg(seq, "ok") for seq in range(1, 500)]  # 5 tokens each
    current = cur(seq=1000, content="abcd")  # 5 tokens
    p = plan(current=current, history=history, budget=1000, share=0, policy=policy)
    assert history_ids(p) == [f"m{seq}" for seq in range(301, 500)]  # 199 × 5 = 995
    assert excluded_messages(p) == [f"m{seq}" for seq in range(300, 280, -1)]
    assert p.excluded_counts == (("message", "budget", 300),)
    assert p.estimated_tokens == 1000


@pytest.mark.parametrize("policy", ["contiguous", "skip"])
def test_it_orders_equal_timestamp_messages_by_seq(policy):
    """I3: ordering is by seq alone (ids sort the other way round, input order is shuffled);
    with room for one message, the newest seq wins."""
    history = [msg(3, "ok", id="a"), msg(1, "ok", id="c"), msg(2, "ok", id="b")]
    p = plan(history=history, policy=policy)
    assert history_ids(p) == ["c", "b", "a"]
    tight = plan(
        history=history,
        policy=policy,
        share=0,
        budget=estimate_message(cur().content) + estimate_message("ok"),
    )
    assert history_ids(tight) == ["a"]
    assert excluded_messages(tight) == ["b", "c"]


@pytest.mark.parametrize(
    "content", [CODE_BLOCK, "```\n" + "\t" * 50 + "\n```", "😀" * 25, "漢字" * 30, "a\u0301" * 9]
)
def test_it_estimates_unusual_content(content):
    """I3: code blocks, tabs, emoji, CJK and combining marks are sized by UTF-8 bytes."""
    p = plan(history=[msg(1, content)], current=cur(content=content))
    expected = math.ceil(len(content.encode("utf-8")) / 4) + 4
    assert p.current_tokens == expected
    assert p.history[0][1] == expected
    assert p.estimated_tokens == 2 * expected


@pytest.mark.parametrize(
    ("n_bytes", "available", "policy", "chosen", "excluded"),
    [
        pytest.param([4, 4, 4], 15, "contiguous", ("a", "b", "c"), (), id="all-fit"),
        pytest.param([4, 4, 4], 10, "contiguous", ("b", "c"), ("a",), id="two-fit"),
        pytest.param([4, 400, 4], 10, "contiguous", ("c",), ("a", "b"), id="contiguous-stops"),
        pytest.param([4, 400, 4], 10, "skip", ("a", "c"), ("b",), id="skip-continues"),
        pytest.param([0, 0, 0], 3, "skip", (), ("a", "b", "c"), id="overhead-counts"),
        pytest.param([], 10, "skip", (), (), id="nothing"),
    ],
)
def test_it_selects_history_by_bytes_alone(n_bytes, available, policy, chosen, excluded):
    """I3: select_history sizes candidates by octet length, newest-first, oldest-first out."""
    candidates = [
        HistoryCandidate(id=name, seq=seq, role="user", n_bytes=n)
        for seq, (name, n) in enumerate(zip("abc", n_bytes, strict=False), start=1)
    ]
    assert select_history(90, list(reversed(candidates)), 90 + available, policy) == (
        chosen,
        excluded,
    )


MEMS = [
    mem("r1", "a" * 20, key="k.one", label="One"),  # "One: " + 20 = 25 bytes → 7 + 4 = 11
    mem("r2", "b" * 80, key="k.two", label="Two"),  # 85 bytes → 22 + 4 = 26
    mem("r3", "c" * 4, key="k.three", label="Three"),  # 11 bytes → 3 + 4 = 7
]


@pytest.mark.parametrize(
    ("budget", "share", "included", "budget_excluded"),
    [
        pytest.param(1000, 0.3, ["r1", "r2", "r3"], [], id="all-fit"),
        pytest.param(100, 0.3, ["r1", "r3"], ["r2"], id="skip-and-continue"),  # cap 30
        pytest.param(100, 0.1, ["r3"], ["r1", "r2"], id="only-the-small-one"),  # cap 10
        pytest.param(100, 0.06, [], ["r1", "r2", "r3"], id="none-fits"),  # cap 6
        pytest.param(1000, 0, [], ["r1", "r2", "r3"], id="share-zero"),
        pytest.param(1000, 0.0, [], ["r1", "r2", "r3"], id="share-zero-float"),
        pytest.param(48, 1, ["r1", "r2", "r3"], [], id="share-one"),
    ],
)
def test_it_caps_the_memory_section(budget, share, included, budget_excluded):
    """I3: memories take at most floor(memory_share × budget), in the given order; an item
    that does not fit → `budget` and later smaller items are still tried."""
    p = plan(memories=MEMS, budget=budget, share=share, current=cur(content=""))
    assert [pm.record.id for pm in p.memories] == included
    assert excluded_memories(p) == dict.fromkeys(budget_excluded, "budget")
    assert p.memory_tokens <= math.floor(share * budget)
    assert p.memory_tokens == sum(estimate_memory(pm.label, pm.value) for pm in p.memories)
    assert p.estimated_tokens <= budget


@pytest.mark.parametrize(
    ("share", "budget", "cap"),
    [(0.29, 100, 29), (0.3, 10, 3), (0.7, 10, 7), (1, 7, 7), (0, 7, 0), (0.333, 1000, 333)],
)
def test_it_floors_the_decimal_share(share, budget, cap):
    """I3: floor(memory_share × budget) on the share's decimal value (0.29 × 100 is 29)."""
    assert memory_cap(PlanParams(budget=budget, memory_share=share)) == cap


def test_it_reports_resolver_and_projection_exclusions():
    """I5: records the projection kept out (unsupported, low-confidence, …) are reported with
    their reason and never enter the plan; uncertain ones stay marked `uncertain`. I9: the
    list goes by kind, then reason, and each total is counted."""
    p = plan(
        memories=[mem("r5", "Harbor?", certainty="uncertain")],
        memory_excluded=[
            ("r9", "unsupported"),
            Exclusion("r8", "low-confidence"),
            ("r7", "superseded"),
        ],
        history=[msg(1, "x" * 4000)],
        budget=500,
    )
    assert p.excluded == (
        ("memory", "r8", "low-confidence"),
        ("memory", "r7", "superseded"),
        ("memory", "r9", "unsupported"),
        ("message", "m1", "budget"),
    )
    assert p.excluded_counts == (
        ("memory", "low-confidence", 1),
        ("memory", "superseded", 1),
        ("memory", "unsupported", 1),
        ("message", "budget", 1),
    )
    assert [pm.as_prompt()["certainty"] for pm in p.memories] == ["uncertain"]


@pytest.mark.parametrize(
    ("content", "memories", "budget", "share", "needed", "available"),
    [
        pytest.param("x" * 400, [], 100, 0.3, 104, 100, id="current-alone"),
        pytest.param("x" * 76, MEMS[:1], 30, 0.5, 23, 19, id="after-memories-take-their-share"),
        pytest.param("", [], 3, 0, 4, 3, id="overhead-alone"),
    ],
)
def test_it_raises_budget_exceeded(content, memories, budget, share, needed, available):
    """I3: the current message must fit in budget minus the memory section, else 422."""
    with pytest.raises(BudgetExceeded) as info:
        plan(current=cur(content=content), memories=memories, budget=budget, share=share)
    assert info.value.status == 422
    assert info.value.code == "budget_exceeded"
    assert info.value.extra == {"needed_tokens": needed, "available_tokens": available}
    assert str(needed) in info.value.detail and str(available) in info.value.detail


def test_it_fits_the_current_message_exactly():
    """I3: a current message of exactly the remaining budget fits."""
    p = plan(current=cur(content="x" * 76), memories=MEMS[:1], budget=34, share=0.5)
    assert p.estimated_tokens == 34
    assert [pm.record.id for pm in p.memories] == ["r1"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (PlanParams(budget=0), "budget"),
        (PlanParams(budget=-5), "budget"),
        (PlanParams(budget=1.5), "budget"),
        (PlanParams(budget=True), "budget"),
        (PlanParams(budget="100"), "budget"),
        (PlanParams(budget=100, memory_share=-0.1), "memory_share"),
        (PlanParams(budget=100, memory_share=1.01), "memory_share"),
        (PlanParams(budget=100, memory_share=float("nan")), "memory_share"),
        (PlanParams(budget=100, memory_share="0.3"), "memory_share"),
        (PlanParams(budget=100, history="all"), "history"),
        (PlanParams(budget=100, capabilities="photo"), "capabilities"),
    ],
)
def test_it_rejects_bad_parameters(params, field):
    """I3: budget a positive int, memory_share in [0, 1], history contiguous|skip."""
    with pytest.raises(ValidationError) as info:
        build_plan(
            current=cur(),
            history=[],
            memories=[],
            memory_excluded=[],
            params=params,
            resolver_version=RESOLVER_VERSION,
        )
    assert list(info.value.errors) == [field]
