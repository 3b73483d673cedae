"""Property-based tests of the relevance order (SPEC §7 I6), with Hypothesis: the same plan and
hash whatever the input order, nothing the projection excluded admitted, `certainty` order
exactly as before, zero-score memories only after every higher score that fits. No database."""

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

import turns.relevance as relevance_module
from conversations.scopes import Scope
from memory.domain import RESOLVER_VERSION, MemoryRecord
from memory.projection import project
from tests.turns.core.relevance_builders import T0, cur, ids, legacy_hash
from turns.planner import PlanMessage, PlanParams, build_plan, memory_cap
from turns.relevance import bm25_scores, document_terms
from turns.tokens import estimate_memory

WORDS = [
    "letter",
    "basil",
    "plant",
    "jazz",
    "rain",
    "boston",
    "harbor",
    "marlowe",
    "tea",
    "the",
    "a",
]


text_strategy = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)


record_strategy = st.tuples(
    st.sampled_from(
        ["story.letter.status", "basil_plant.name", "user.likes", "user.lives_in", "tea.kind"]
    ),
    text_strategy.filter(bool),
    st.sampled_from(["user", "character", "conversation"]),
    st.sampled_from(["model-inferred", "rule-extracted", "user-confirmed", "user-corrected"]),
    st.sampled_from([1.0, 0.9, 0.7, 0.4]),
    st.booleans(),  # has a source
    st.integers(0, 50),  # age in days
)


def _records(raw) -> list[MemoryRecord]:
    scopes = {
        "user": Scope("user"),
        "character": Scope("character", character="ava"),
        "conversation": Scope("conversation", conversation="c1"),
    }
    out = []
    for i, (key, value, scope, authority, confidence, sourced, age) in enumerate(raw):
        at = T0 - timedelta(days=age)
        out.append(
            MemoryRecord(
                id=f"r{i:03d}",
                user="u1",
                key=key,
                value=value,
                scope=scopes[scope],
                authority=authority,
                valid_from=at,
                recorded_at=at,
                evidence_time=at,
                version=i + 1,
                confidence=confidence,
                sources=("m0",) if sourced else (),
            )
        )
    return out


def _project(records):
    return project(
        records,
        labels={"basil_plant.name": "Basil plant's name"},
        many_keys=frozenset({"user.likes"}),
    )


def _plan_from(records, history, *, content, budget, share, order, pinned=frozenset()):
    projection = _project(records)
    return projection, build_plan(
        current=cur(content, seq=50),
        history=history,
        memories=projection.prompt,
        memory_excluded=list(projection.excluded),
        params=PlanParams(budget=budget, memory_share=share, memory_order=order),
        resolver_version=RESOLVER_VERSION,
        pinned_keys=pinned,
    )


plan_inputs = {
    "raw": st.lists(record_strategy, max_size=12),
    "history": st.lists(text_strategy, max_size=5),
    "content": text_strategy,
    "budget": st.integers(60, 400),
    "share": st.sampled_from([0.1, 0.3, 0.6, 1.0]),
    "pinned": st.sets(st.sampled_from(["user.likes", "tea.kind", "user.preferred_name"])),
}


def _history(texts) -> list[PlanMessage]:
    return [
        PlanMessage(f"h{i}", i + 1, "user" if i % 2 == 0 else "assistant", t or "…")
        for i, t in enumerate(texts)
    ]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(**plan_inputs, order=st.sampled_from(["certainty", "relevance"]), data=st.data())
def test_it_gives_the_same_plan_and_hash_whatever_the_input_order(
    raw, history, content, budget, share, pinned, order, data
):
    """I6/I3: the same state and parameters give the same plan and hash, whatever the order
    records, history and pinned keys arrive in."""
    records = _records(raw)
    messages = _history(history)
    _, first = _plan_from(
        records,
        messages,
        content=content,
        budget=budget,
        share=share,
        order=order,
        pinned=frozenset(pinned),
    )
    _, again = _plan_from(
        data.draw(st.permutations(records)),
        data.draw(st.permutations(messages)),
        content=content,
        budget=budget,
        share=share,
        order=order,
        pinned=frozenset(data.draw(st.permutations(sorted(pinned)))),
    )
    assert again == first
    assert again.plan_hash == first.plan_hash


@settings(max_examples=150, deadline=None, derandomize=True)
@given(**plan_inputs)
def test_it_never_admits_what_the_projection_excluded_nor_changes_a_certainty(
    raw, history, content, budget, share, pinned
):
    """I6: relevance only orders what passed P1–P4: it admits nothing they excluded, keeps
    their reasons, and every admitted memory keeps its projected certainty."""
    projection, p = _plan_from(
        _records(raw),
        _history(history),
        content=content,
        budget=budget,
        share=share,
        order="relevance",
        pinned=frozenset(pinned),
    )
    projected = {pm.record.id: pm.certainty for pm in projection.prompt}
    assert set(ids(p)) <= set(projected)
    assert all(pm.certainty == projected[pm.record.id] for pm in p.memories)
    for e in projection.excluded:
        assert e.id not in ids(p)
        assert ("memory", e.id, e.reason) in p.excluded
    assert len(p.relevance) == len(p.memories) and all(
        s is not None and s >= 0 for s in p.relevance
    )


@settings(max_examples=150, deadline=None, derandomize=True)
@given(**plan_inputs)
def test_it_plans_exactly_as_before_under_certainty(raw, history, content, budget, share, pinned):
    """I6: with memory_order=certainty the plan is exactly today's (I3): the projection's
    order filled skip-and-continue, no relevance, the same hash as before."""
    projection, p = _plan_from(
        _records(raw),
        _history(history),
        content=content,
        budget=budget,
        share=share,
        order="certainty",
        pinned=frozenset(pinned),
    )
    cap, used, expected = memory_cap(PlanParams(budget=budget, memory_share=share)), 0, []
    for pm in projection.prompt:  # the I3 fill, as the SPEC words it
        cost = estimate_memory(pm.label, pm.value)
        if used + cost <= cap:
            expected.append(pm.record.id)
            used += cost
    assert ids(p) == expected
    assert p.relevance == (None,) * len(expected)
    assert p.plan_hash == legacy_hash(p, PlanParams(budget=budget, memory_share=share))
    default = build_plan(
        current=cur(content, seq=50),
        history=_history(history),
        memories=projection.prompt,
        memory_excluded=list(projection.excluded),
        params=PlanParams(budget=budget, memory_share=share),
        resolver_version=RESOLVER_VERSION,
    )
    assert default == p


@settings(max_examples=200, deadline=None, derandomize=True)
@given(**plan_inputs)
def test_it_places_a_zero_score_memory_only_after_every_higher_score_that_fits(
    raw, history, content, budget, share, pinned
):
    """I6: apart from pinned keys, admitted memories come in non-increasing score order, and a
    memory with a higher score than an admitted one was left out only because it did not fit
    in what was left when its turn came."""
    projection, p = _plan_from(
        _records(raw),
        _history(history),
        content=content,
        budget=budget,
        share=share,
        order="relevance",
        pinned=frozenset(pinned),
    )
    scores = dict(zip(ids(p), p.relevance, strict=True))
    unpinned = [pm for pm in p.memories if pm.key not in pinned]
    assert [scores[pm.record.id] for pm in unpinned] == sorted(
        (scores[pm.record.id] for pm in unpinned), reverse=True
    )
    pinned_first = [pm.key in pinned for pm in p.memories]
    assert pinned_first == sorted(pinned_first, reverse=True)

    # Re-score the left-out memories and replay the fill: each was tried after every admitted
    # memory of higher rank and did not fit in what those had left.
    everything = projection.prompt
    all_scores = dict(
        zip(
            [pm.record.id for pm in everything],
            bm25_scores(
                relevance_module.query_terms(
                    content, [m.content for m in reversed(_history(history)[-2:])]
                ),
                [document_terms(pm) for pm in everything],
            ),
            strict=True,
        )
    )
    assert all(all_scores[i] == s for i, s in scores.items())
    rank = {
        pm.record.id: (pm.key not in pinned, -all_scores[pm.record.id], n)
        for n, pm in enumerate(everything)
    }
    cap = memory_cap(PlanParams(budget=budget, memory_share=share))
    left_out = [pm for pm in everything if pm.record.id not in scores]
    for pm in left_out:
        before = sum(
            estimate_memory(a.label, a.value)
            for a in p.memories
            if rank[a.record.id] < rank[pm.record.id]
        )
        assert before + estimate_memory(pm.label, pm.value) > cap
        assert ("memory", pm.record.id, "budget") in p.excluded


def test_it_fills_a_tight_budget_with_the_topic_of_the_message():
    """I6 quality check: a generated user with 300 memories over 30 topics and a memory share
    that fits about 10 items. For a message about any one topic, at least 8 of the admitted
    memories are about it under `relevance`; under `certainty` (newest first) the same check
    fails, so it measures the order, not the data."""
    from bench.relevance import QUALITY_TARGET, quality

    result = quality()
    assert (result["memories"], result["topics"]) == (300, 30)
    assert 9 <= result["admitted_mean"] <= 11
    for row in result["rows"]:
        assert row["relevance"] >= QUALITY_TARGET, row
    assert result["certainty_mean"] < QUALITY_TARGET / 4
