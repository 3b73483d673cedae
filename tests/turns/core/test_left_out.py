"""SPEC §7 I9, the pure collector of what a plan leaves out (`turns.left_out`): per
`(kind, reason)` every entry counted and at most `limit` listed in the rule's order — messages
newest first by `(seq, id)`, memories by `(rank, id)` (the fill order, or the id alone). No
database; Hypothesis compares it with a full sort of everything."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from turns.left_out import LISTED, UNRANKED, LeftOut

IDS = st.text(alphabet="0123456789abcdef", min_size=1, max_size=3)
KINDS = st.sampled_from(["memory", "message"])
# Any reason: the collector knows none of them.
REASONS = st.sampled_from(["budget", "forgotten", "scope", "withheld", "a-reason-from-later"])
# One call: (kind, reason, ranked?, [(id, rank)]) — ids distinct within a call.
CALLS = st.lists(
    st.tuples(
        KINDS,
        REASONS,
        st.booleans(),
        st.dictionaries(IDS, st.integers(0, 50), max_size=40).map(lambda d: list(d.items())),
    ),
    max_size=8,
)


def collect(calls, limit):
    left = LeftOut(limit)
    for kind, reason, ranked, pairs in calls:
        if ranked:
            left.ranked(kind, reason, pairs)
        else:
            left.by_id(kind, reason, [i for i, _ in pairs])
    return left


def reference(calls, limit):
    """Every entry kept (an id's first rank per group), each group fully sorted, cut."""
    groups: dict[tuple[str, str], dict[str, float]] = {}
    for kind, reason, ranked, pairs in calls:
        group = groups.setdefault((kind, reason), {})
        for item_id, rank in pairs:
            group.setdefault(item_id, rank if ranked else 0)
    listed, counts = [], []
    for (kind, reason), group in sorted(groups.items()):
        if not group:
            continue
        full = sorted(group, key=lambda i: (group[i], i), reverse=kind == "message")
        listed += [(kind, i, reason) for i in full[:limit]]
        counts.append((kind, reason, len(group)))
    return tuple(listed), tuple(counts)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(calls=CALLS, limit=st.sampled_from([1, 3, LISTED]))
def test_it_lists_the_first_entries_of_a_full_sort_and_counts_every_one(calls, limit):
    """I9: for each (kind, reason) the listed entries are the first `limit` of a full sort by
    the rule's order, the groups sorted by kind then reason; the counts are the full totals."""
    left = collect(calls, limit)
    assert (left.listed(), left.counts()) == reference(calls, limit)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(calls=CALLS, data=st.data())
def test_it_answers_the_same_whatever_order_the_entries_of_a_call_come_in(calls, data):
    """I9: determinism and order independence — shuffling the entries of each call changes
    neither the list nor the counts."""
    shuffled = [
        (kind, reason, ranked, data.draw(st.permutations(pairs)))
        for kind, reason, ranked, pairs in calls
    ]
    a, b = collect(calls, LISTED), collect(shuffled, LISTED)
    assert (a.listed(), a.counts()) == (b.listed(), b.counts())
    again = collect(calls, LISTED)
    assert (a.listed(), a.counts()) == (again.listed(), again.counts())


def test_it_lists_messages_newest_first_and_memories_by_rank_then_id():
    """I9: the rule's order by kind — a message by `(seq, id)` descending, a memory by its
    place in the fill order, and unranked ids after the ranked ones, by id."""
    left = LeftOut(limit=3)
    left.ranked("message", "budget", [("a", 1), ("b", 7), ("c", 7), ("d", 2)])
    left.ranked("memory", "budget", [("z", 0), ("y", 1)])
    left.by_id("memory", "budget", ["x", "z"], UNRANKED)
    left.by_id("memory", "scope", ["q", "p", "r", "s"])
    assert left.listed() == (
        ("memory", "z", "budget"),
        ("memory", "y", "budget"),
        ("memory", "x", "budget"),
        ("memory", "p", "scope"),
        ("memory", "q", "scope"),
        ("memory", "r", "scope"),
        ("message", "c", "budget"),
        ("message", "b", "budget"),
        ("message", "d", "budget"),
    )
    assert left.counts() == (
        ("memory", "budget", 3),
        ("memory", "scope", 4),
        ("message", "budget", 4),
    )


def test_it_counts_nothing_for_a_group_given_no_entries():
    """I9: a reason with no entry has no count line (every count is at least 1)."""
    left = LeftOut()
    left.ranked("message", "forgotten", [])
    left.by_id("memory", "memory-off", [])
    assert left.listed() == () and left.counts() == ()
