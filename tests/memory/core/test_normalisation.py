"""W12 in the pure core: expired records and superseded chains marked from their time, idempotently
and without changing the resolution. No database."""

from __future__ import annotations

import pytest

from memory.normalisation import StatusChange, apply_changes, plan_normalisation
from tests.memory.core.records import at, outcome, rec, run


def test_it_marks_expired_records_since_their_valid_until():
    """W12: expired since valid_until, only once valid_until <= now."""
    records = [rec("a", vu=5), rec("b", key="dog.name", vu=7)]
    assert plan_normalisation(records, at(6)) == [StatusChange("a", "expired", at(5))]


def test_it_marks_a_chain_from_the_oldest_record_up():
    """W12: each version is superseded since its open-ended correction's valid_from, and a
    record is marked only after what it supersedes; any input order gives the same plan."""
    records = [
        rec("v1"),
        rec("v2", vf=1, version=2, supersedes="v1"),
        rec("v3", vf=2, version=3, supersedes="v2"),
        rec("v4", vf=3, version=4, supersedes="v3"),
    ]
    expected = [
        StatusChange("v1", "superseded", at(1)),
        StatusChange("v2", "superseded", at(2)),
        StatusChange("v3", "superseded", at(3)),
    ]
    assert plan_normalisation(records, at(10)) == expected
    assert plan_normalisation(list(reversed(records)), at(10)) == expected
    # the last correction is not valid yet at 2.5: v3 stays unmarked
    assert plan_normalisation(records, at(2.5)) == expected[:2]


@pytest.mark.parametrize(
    ("correction", "why"),
    [
        ({"vu": 19}, "a temporary override hides only inside its window"),
        ({"status": "forgotten", "since": 2, "value": ""}, "a forgotten record hides nothing"),
        ({"evidence": -5}, "older evidence: a tombstone could block it alone"),
        ({"vf": 20}, "not valid yet at the normalisation time"),
    ],
)
def test_it_does_not_mark_what_an_unusable_correction_names(correction, why):
    """W12: only an open-ended, active or superseded correction with valid_from <= now marks
    what it names (and not one whose evidence is older than the record's)."""
    records = [rec("v1"), rec("v2", version=2, supersedes="v1", **{"vf": 1, **correction})]
    assert plan_normalisation(records, at(10)) == [], why


def test_it_waits_for_the_whole_chain_before_marking():
    """W12: v3 supersedes a temporary override v2, which hides v1 only inside its window.
    v1 is never marked by v2, so v2 must not be marked superseded (a database skipping it
    would let v1 back); once v2's window is over it is marked expired instead."""
    records = [
        rec("v1"),
        rec("v2", vf=1, vu=6, version=2, supersedes="v1"),
        rec("v3", vf=3, version=3, supersedes="v2"),
    ]
    assert plan_normalisation(records, at(4)) == []
    assert plan_normalisation(records, at(7)) == [StatusChange("v2", "expired", at(6))]


def test_it_never_touches_forgotten_rows_or_re_marks_marked_ones():
    """W12: forgotten rows stay as they are and a marked row keeps its mark."""
    records = [
        rec("f", vu=1, status="forgotten", since=2, value=""),
        rec("s", key="dog.name", vu=1, status="superseded", since=0.5),
        rec("e", key="cat.name", vu=1, status="expired", since=1),
    ]
    assert plan_normalisation(records, at(10)) == []


def test_it_prefers_the_earlier_mark_when_both_apply():
    """W12: superseded since 2 beats expired since 5 (the row hides sooner); the reverse
    picks expired."""
    records = [rec("v1", vu=5), rec("v2", vf=2, version=2, supersedes="v1")]
    assert plan_normalisation(records, at(10)) == [StatusChange("v1", "superseded", at(2))]
    records = [rec("v1", vu=1), rec("v2", vf=2, version=2, supersedes="v1")]
    assert plan_normalisation(records, at(10)) == [StatusChange("v1", "expired", at(1))]


def test_it_normalises_idempotently_without_changing_the_resolution():
    """W12: applying the plan then planning again gives []; the resolution is the same at
    every now, also when rows marked before now are skipped."""
    records = [
        rec("v1"),
        rec("v2", vf=1, version=2, supersedes="v1"),
        rec("v3", vf=2, version=3, supersedes="v2"),
        rec("x", key="dog.name", vu=3),
    ]
    plan = plan_normalisation(records, at(10))
    normalised = apply_changes(records, plan)
    assert plan_normalisation(normalised, at(10)) == []
    for now in (-1, 0, 0.5, 1, 1.5, 2, 3, 4, 11):
        before = run(records, now=now)
        after = run(normalised, now=now)
        assert [r.id for r in after.active] == [r.id for r in before.active]
        assert after.excluded == before.excluded
        skipped = [
            r
            for r in normalised
            if r.status not in ("superseded", "expired") or r.status_since > at(now)
        ]
        reduced = outcome(run(skipped, now=now))
        assert reduced == {k: v for k, v in outcome(before).items() if k in reduced}


def test_it_applies_changes_in_place_of_the_rows():
    """apply_changes writes status and status_since and keeps the input order."""
    records = [rec("b"), rec("a", vu=1)]
    changed = apply_changes(records, [StatusChange("a", "expired", at(1))])
    assert [(r.id, r.status, r.status_since) for r in changed] == [
        ("b", "active", None),
        ("a", "expired", at(1)),
    ]
