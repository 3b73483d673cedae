"""bench/pure.py's control: the plain resolver implements SPEC §3's R1–R6 as the resolver does —
the same active records in the same order, the same reason for every excluded id and the same
counts — on the benchmark's worlds and on Hypothesis worlds (normalised or not, with repeated
rows), so what the harness compares is the same work done two ways. The comparison is
reported as a target per N, pass or MISS, never asserted as a timing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import data, pure, report
from bench import targets as bench_targets
from memory.normalisation import apply_changes, plan_normalisation
from memory.resolver import resolve
from tests.memory.core.test_resolver_properties import MANY_KEYS, SECRET, any_world, times

PROPERTY = settings(max_examples=150, deadline=None, derandomize=True)


@pytest.mark.parametrize(("n", "seed"), [(1_000, 1), (3_000, 2), (5_000, 7)])
def test_it_answers_as_the_resolver_on_the_benchmark_worlds(n, seed):
    world = data.build_world(n, seed=seed)
    context = world.context()
    kwargs = dict(many_keys=world.many_keys, secret=world.secret)
    resolution = resolve(world.records, world.tombstones, context, **kwargs)
    plain = pure.plain_resolve(world.records, world.tombstones, context, **kwargs)
    pure.check_same_answer(resolution, plain)
    active, reasons, counts = plain
    assert len(active) + len(reasons) == n
    assert sum(counts.values()) == len(reasons) == len(resolution.excluded)
    # Every step decides some record here, so none of the comparisons is vacuous.
    assert set(counts) == {
        "scope",
        "forgotten",
        "not-yet-valid",
        "expired",
        "superseded",
        "lower-precedence",
    }


@PROPERTY
@given(world=any_world, normalised_at=times, data=st.data())
def test_it_answers_as_the_resolver_on_any_world(world, normalised_at, data):
    """Any world, as stored or normalised (W12's stored marks), in any order and with rows
    repeated."""
    records, tombstones, context = world
    normalised = apply_changes(records, plan_normalisation(records, normalised_at))
    for given_records in (records, normalised):
        shuffled = data.draw(st.permutations(given_records + given_records[:2]))
        kwargs = dict(many_keys=MANY_KEYS, secret=SECRET)
        pure.check_same_answer(
            resolve(shuffled, tombstones, context, **kwargs),
            pure.plain_resolve(shuffled, tombstones, context, **kwargs),
        )


def test_it_names_what_differs_when_the_answers_differ():
    world = data.build_world(1_000)
    context = world.context()
    kwargs = dict(many_keys=world.many_keys, secret=world.secret)
    resolution = resolve(world.records, world.tombstones, context, **kwargs)
    active, reasons, counts = pure.plain_resolve(world.records, world.tombstones, context, **kwargs)
    with pytest.raises(AssertionError, match="keep different records"):
        pure.check_same_answer(resolution, (active[1:], reasons, counts))
    some = next(iter(reasons))
    with pytest.raises(AssertionError, match="exclude differently"):
        pure.check_same_answer(resolution, (active, {**reasons, some: "other"}, counts))
    with pytest.raises(AssertionError, match="counts"):
        pure.check_same_answer(resolution, (active, reasons, {**counts, "scope": 0}))


def _pure_results(ratios: dict[int, float]) -> dict:
    return {
        "meta": {},
        "databases": [],
        "pure": {
            "sizes": [
                {
                    "n": n,
                    "best_ms": ratio * 2.0,
                    "best_cpu_ms": ratio * 2.0,
                    "active": n // 10,
                    "excluded": n - n // 10,
                    "records_per_s": 2e6,
                    "records_per_cpu_s": 2e6,
                    "plain": {
                        "regime": "paused",
                        "calls": 10,
                        "resolver_ms": ratio * 2.0,
                        "plain_ms": 2.0,
                        "ratio": ratio,
                        "ratio_cpu": ratio * 1.1,
                    },
                }
                for n, ratio in ratios.items()
            ]
        },
    }


def test_it_judges_each_size_against_the_plain_resolver_at_one_and_a_half_times():
    rows = {
        r["target"]: r
        for r in bench_targets.targets(_pure_results({1_000: 1.5, 10_000: 1.51, 100_000: 0.9}))
    }
    assert rows["pure resolver <= 1.5x the plain resolver at N=1,000"]["result"] == "pass"
    assert rows["pure resolver <= 1.5x the plain resolver at N=10,000"]["result"] == "MISS"
    assert rows["pure resolver <= 1.5x the plain resolver at N=100,000"]["measured"] == (
        "1.80 vs 2.00 ms = 0.90x (CPU 0.99x; median of 10 alternating calls, collector paused)"
    )


def test_it_reports_the_resolver_beside_the_plain_resolver_per_size():
    results = {**_pure_results({1_000: 1.25, 100_000: 0.9}), "meta": _META}
    results["targets"] = bench_targets.targets(results)
    text = report.render(results, markdown=True)
    assert "| N records | resolver ms | plain resolver ms | ratio | ratio in CPU |" in text
    assert "| 1,000 | 2.50 | 2.00 | 1.25x | 1.38x |" in text
    assert "| 100,000 | 1.80 | 2.00 | 0.90x | 0.99x |" in text


_META = {
    "command": "python -m bench --only pure",
    "started": "2026-12-06 09:00 UTC",
    "machine": "2 CPUs",
    "load_start": "1.0",
    "load_end": "1.0",
    "seconds": 60.0,
    "how": "How.",
}
