"""SPEC §7 I9, the stored plan (`conversations.plan_snapshot`): a snapshot made since I9 holds
the same bounded `excluded` and every total in `excluded_counts`; one stored before it listed
every entry and kept no counts. Both read back to every total and to what a reader says as
"and N more". No database."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from conversations.plan_snapshot import PlanSnapshot

NOW = datetime(2026, 12, 1, tzinfo=UTC)
BOUNDED = {
    "boundary_seq": 60,
    "current": "cur",
    "history": ["m58", "m59"],
    "memories": ["r1"],
    "certainty": ["confirmed"],
    "excluded": [
        *(["memory", f"r{i:03d}", "budget"] for i in range(100, 120)),
        ["memory", "r7", "scope"],
        *(["message", f"m{seq}", "budget"] for seq in range(57, 37, -1)),
    ],
    "excluded_counts": [
        ["memory", "budget", 480],
        ["memory", "scope", 1],
        ["message", "budget", 57],
    ],
    "estimated_tokens": 90,
    "plan_hash": "h",
    "now": NOW.isoformat(),
    "params": {"budget": 100},
    "decisions": [],
    "policy": [],
}
# The same plan as a snapshot stored before I9: every entry listed, no counts.
UNBOUNDED = {
    **{k: v for k, v in BOUNDED.items() if k != "excluded_counts"},
    "excluded": [
        *(["memory", f"r{i:03d}", "budget"] for i in range(100, 580)),
        ["memory", "r7", "scope"],
        *(["message", f"m{seq}", "budget"] for seq in range(1, 58)),
    ],
}


def test_it_reads_every_total_of_a_bounded_snapshot_and_what_it_did_not_list():
    """I9: a new snapshot's counts are every total; "and N more" is each count less what
    is listed, per kind and reason, sorted."""
    snapshot = PlanSnapshot.of(BOUNDED)
    assert len(snapshot.excluded) == 41
    assert snapshot.left_out_counts() == {
        ("memory", "budget"): 480,
        ("memory", "scope"): 1,
        ("message", "budget"): 57,
    }
    assert snapshot.not_listed() == [("memory", "budget", 460), ("message", "budget", 37)]


def test_it_reads_an_older_snapshot_whose_list_is_its_totals():
    """I9: a snapshot stored before the counts listed every entry: its totals are what it
    lists, and nothing is left unlisted."""
    snapshot = PlanSnapshot.of(UNBOUNDED)
    assert snapshot.excluded_counts == ()
    assert len(snapshot.excluded) == 538
    assert snapshot.left_out_counts() == PlanSnapshot.of(BOUNDED).left_out_counts()
    assert snapshot.not_listed() == []


def test_it_stores_what_the_planner_made_and_reads_it_back_the_same():
    """I9: the snapshot holds the plan's bounded list and its counts, and reads back equal."""
    made = PlanSnapshot.made(
        {
            "boundary_seq": 60,
            "current": "cur",
            "history": ["m59"],
            "memories": ["r1"],
            "certainty": ["confirmed"],
            "excluded": (("memory", "r7", "scope"), ("message", "m58", "budget")),
            "excluded_counts": (("memory", "scope", 1), ("message", "budget", 58)),
            "estimated_tokens": 20,
            "plan_hash": "h",
        },
        now=NOW,
        params={"budget": 100},
        policy=[],
    )
    stored = made.stored()
    assert stored["excluded"] == [["memory", "r7", "scope"], ["message", "m58", "budget"]]
    assert stored["excluded_counts"] == [["memory", "scope", 1], ["message", "budget", 58]]
    assert PlanSnapshot.of(stored) == made
    assert made.not_listed() == [("message", "budget", 57)]


def test_it_skips_counts_of_the_wrong_shape_and_never_counts_fewer_than_it_lists():
    """I9 with §9: a stored count that is not (kind, reason, count ≥ 0) is skipped (its total
    is then what is listed); a count below what is listed counts the listed ones; a count in
    the plan's own shape `{"kind", "reason", "count"}` reads as the array."""
    stored = {
        **BOUNDED,
        "excluded_counts": [
            ["memory", "budget", "480"],
            ["memory", "scope", True],
            ["message", "budget", 3],
            {"kind": "memory", "reason": "forgotten", "count": 4},
            ["memory", "superseded", -1],
            "memory",
        ],
    }
    snapshot = PlanSnapshot.of(stored)
    assert snapshot.excluded_counts == (("message", "budget", 3), ("memory", "forgotten", 4))
    assert snapshot.left_out_counts() == {
        ("memory", "budget"): 20,
        ("memory", "forgotten"): 4,
        ("memory", "scope"): 1,
        ("message", "budget"): 20,
    }
    assert snapshot.not_listed() == [("memory", "forgotten", 4)]


ENTRIES = st.lists(
    st.tuples(
        st.sampled_from(["memory", "message"]),
        st.text(alphabet="abcdef", min_size=1, max_size=3),
        st.sampled_from(["budget", "withheld"]),
    ),
    unique=True,
    max_size=90,
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(entries=ENTRIES)
def test_it_agrees_for_both_generations_of_the_same_plan(entries):
    """I9: a plan stored whole (before I9) and the same plan stored bounded (at most 20 per
    kind and reason, with counts) read back to the same totals; the bounded one says the
    difference as "and N more", whatever reasons it holds."""
    whole = PlanSnapshot.of({"memories": [], "excluded": [list(e) for e in entries]})
    totals = whole.left_out_counts()
    seen: dict[tuple[str, str], int] = {}
    bounded_list = []
    for kind, item_id, reason in entries:
        seen[kind, reason] = seen.get((kind, reason), 0) + 1
        if seen[kind, reason] <= 20:
            bounded_list.append([kind, item_id, reason])
    bounded = PlanSnapshot.of(
        {
            "memories": [],
            "excluded": bounded_list,
            "excluded_counts": [[k, r, n] for (k, r), n in totals.items()],
        }
    )
    assert bounded.left_out_counts() == totals == dict(sorted(seen.items()))
    assert whole.not_listed() == []
    assert bounded.not_listed() == [(k, r, n - 20) for (k, r), n in totals.items() if n > 20]
