"""What a resolve answers is made where it is read (`memory.reasons`; SPEC §3 R7, R8, §7 I9):
the pass keeps one reason per id, and `excluded`, its counts, its first ids per reason and the
explanations are read from that. Whatever is read, and in whatever order, it equals what a
list made at resolve time held — checked against a fresh computation from the explanations,
for Hypothesis worlds, normalised or not, and for the groups of keys a context is resolved in
(`memory.current.resolve_keyed`)."""

from __future__ import annotations

import heapq
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import reasons
from memory.current import ResolveBasis, resolve_keyed
from memory.domain import Exclusion
from memory.normalisation import apply_changes, plan_normalisation
from memory.reasons import Exclusions
from tests.memory.core.records import CHAR_SCOPE, SCENE_SCOPE, ctx, rec, run, tomb
from tests.memory.core.test_resolver_properties import MANY_KEYS, SECRET, any_world, times
from tests.memory.core.test_resolver_properties import run as run_world

PROPERTY = settings(max_examples=150, deadline=None, derandomize=True)


def _mixed():
    return [
        rec("v1", vf=0),
        rec("v2", vf=1, version=2, supersedes="v1"),
        rec("c1", scope=CHAR_SCOPE, authority="model-inferred", vf=3),
        rec("c2", scope=CHAR_SCOPE, authority="user-confirmed", vf=2, version=2),
        rec("f", key="dog.name", status="forgotten", since=1, value=""),
        rec("s", scope=SCENE_SCOPE),
        rec("late", key="cat.name", vf=200),
        rec("gone", key="cat.name", vf=0, vu=5),
        rec("t", key="home.city", evidence=1),
    ]


def _fresh(resolution) -> tuple[Exclusion, ...]:
    """`excluded` as R7 and R8 define it: every non-active explanation, by id."""
    return tuple(
        Exclusion(record_id, e.reason)
        for record_id, e in sorted(resolution.explanations.items())
        if e.reason != "active"
    )


def test_it_builds_no_exclusion_while_a_resolve_is_only_counted(monkeypatch):
    """I9: a resolve read for its active records, its trace, its counts, its first ids per
    reason and one explanation builds no `Exclusion`; the first read of `excluded` itself
    builds them once."""
    built = []

    def counting(cls, columns, n):
        built.append(n)
        return [cls(*row) for row in zip(*columns.values(), strict=True)]

    monkeypatch.setattr(reasons, "build_slotted", counting)
    resolution = run(_mixed(), tombstones=[tomb("t1", key="home.city", before=5)])
    assert [r.id for r in resolution.active] == ["c2", "v2"]
    assert resolution.trace["excluded_lower_precedence"] == 1
    assert resolution.excluded.counts() == {
        "scope": 1,
        "forgotten": 2,
        "not-yet-valid": 1,
        "expired": 1,
        "superseded": 1,
        "lower-precedence": 1,
    }
    assert resolution.excluded.first(1) == {
        "scope": ["s"],
        "forgotten": ["f"],
        "not-yet-valid": ["late"],
        "expired": ["gone"],
        "superseded": ["v1"],
        "lower-precedence": ["c1"],
    }
    assert len(resolution.excluded) == 7
    assert resolution.explain("t").detail == "blocked by tombstone t1"
    assert built == []
    assert [(e.id, e.reason) for e in resolution.excluded][:2] == [
        ("c1", "lower-precedence"),
        ("f", "forgotten"),
    ]
    assert resolution.excluded[-1] == Exclusion("v1", "superseded")
    assert list(resolution.excluded) == list(resolution.excluded)
    assert built == [7]


def test_it_equals_the_tuple_it_stands_for_and_nothing_else():
    """R7: `excluded` compares as the tuple of `Exclusion`s it stands for did: equal to that
    tuple (either side) and to another of the same, never to a list, and unhashable."""
    resolution = run(_mixed())
    listed = _fresh(resolution)
    assert resolution.excluded == listed
    assert listed == resolution.excluded
    assert resolution.excluded == run(list(reversed(_mixed()))).excluded
    assert resolution.excluded != list(listed)
    assert resolution.excluded != listed[1:]
    assert repr(resolution.excluded) == repr(listed)
    with pytest.raises(TypeError):
        hash(resolution.excluded)


def test_it_joins_the_exclusions_of_disjoint_passes_as_one():
    """The exclusions of resolutions over disjoint ids (groups of keys), joined, are those of
    one resolution of them all; a plain tuple among them joins too."""
    records = _mixed()
    whole = run(records)
    by_key: dict[str, list] = {}
    for record in records:
        by_key.setdefault(record.key, []).append(record)
    parts = [run(group).excluded for group in by_key.values()]
    parts[0] = tuple(parts[0])
    joined = Exclusions.joined(parts)
    assert joined == whole.excluded
    assert joined.counts() == whole.excluded.counts()
    assert joined.first(2) == whole.excluded.first(2)


@PROPERTY
@given(world=any_world, normalised_at=times, limit=st.integers(min_value=0, max_value=4))
def test_it_reads_what_a_fresh_computation_gives(world, normalised_at, limit):
    """Whatever is read first, `excluded`, its length, counts and first ids per reason equal
    what the explanations give, fresh, for any world (normalised at any time or not)."""
    records, tombstones, context = world
    for given_records in (
        records,
        apply_changes(records, plan_normalisation(records, normalised_at)),
    ):
        fresh_first = run_world(given_records, tombstones, context)
        listed = _fresh(fresh_first)
        by_reason: dict[str, list[str]] = {}
        for item in listed:
            by_reason.setdefault(item.reason, []).append(item.id)
        expected_first = {r: heapq.nsmallest(limit, ids) for r, ids in by_reason.items()}
        expected_counts = dict(Counter(item.reason for item in listed))
        counted_first = run_world(given_records, tombstones, context)
        assert counted_first.excluded.counts() == expected_counts
        assert counted_first.excluded.first(limit) == expected_first
        assert len(counted_first.excluded) == len(listed)
        assert counted_first.excluded == listed
        assert fresh_first.excluded == listed
        assert fresh_first.excluded.counts() == expected_counts
        assert fresh_first.excluded.first(limit) == expected_first
        traced = {
            reason: n
            for reason in expected_counts
            if (n := fresh_first.trace["excluded_" + reason.replace("-", "_")])
        }
        assert traced == expected_counts


@PROPERTY
@given(world=any_world, groups=st.sampled_from((1, 2, 4)))
def test_it_reads_a_context_resolved_by_groups_of_keys_as_one_resolve(world, groups):
    """`resolve_keyed`'s joined exclusions and explanations (each group's, read as one) are
    one resolve's: the list, its counts and first ids, each explanation looked up by id, and
    an id no group holds."""
    records, tombstones, context = world
    basis = ResolveBasis(many_keys=MANY_KEYS, labels={}, secret=SECRET, likely=0.85, uncertain=0.5)
    whole = run_world(records, tombstones, context)
    keyed = resolve_keyed(records, tombstones, context, basis, groups=groups).resolution
    assert keyed.excluded.counts() == whole.excluded.counts()
    assert keyed.excluded.first(2) == whole.excluded.first(2)
    assert keyed.excluded == whole.excluded
    for record in records:
        assert keyed.explain(record.id) == whole.explain(record.id)
    assert keyed.explain("no-such-id") is None
    assert "no-such-id" not in keyed.explanations
    assert list(keyed.explanations) == list(whole.explanations)
    assert len(keyed.explanations) == len(whole.explanations)


def test_it_counts_nothing_for_a_resolve_of_nothing():
    resolution = run([], context=ctx())
    assert resolution.excluded == ()
    assert resolution.excluded.counts() == {}
    assert resolution.excluded.first(20) == {}
    assert len(resolution.excluded) == 0
    assert not resolution.excluded
