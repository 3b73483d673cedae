"""W11 in the pure core: each version's effective end and the history's order. No database."""

from __future__ import annotations

import pytest

from memory.history import effective_ends, history_order
from tests.memory.core.records import at, rec


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        # a chain: each version ends where its correction starts
        (
            [
                rec("v1"),
                rec("v2", vf=2, version=2, supersedes="v1"),
                rec("v3", vf=4, version=3, supersedes="v2"),
            ],
            {"v1": 2, "v2": 4, "v3": None},
        ),
        # its own valid_until comes first
        ([rec("v1", vu=1), rec("v2", vf=2, version=2, supersedes="v1")], {"v1": 1, "v2": None}),
        # a temporary override (closed) cuts nothing: the old value comes back after it
        ([rec("v1"), rec("v2", vf=2, vu=4, version=2, supersedes="v1")], {"v1": None, "v2": 4}),
        # a later open record with lower authority does not cut; with equal authority it does
        (
            [
                rec("hi", authority="user-confirmed"),
                rec("lo", vf=2, version=2, authority="model-inferred"),
                rec("eq", vf=5, version=3, authority="user-confirmed"),
            ],
            {"hi": 5, "lo": 5, "eq": None},
        ),
        # never before its own valid_from (a correction that starts earlier); the record a
        # correction supersedes never cuts the correction, even if it starts later
        ([rec("v1", vf=3), rec("v2", vf=1, version=2, supersedes="v1")], {"v1": 3, "v2": None}),
        # equal valid_from: the higher version is later and cuts to an empty window
        ([rec("v1", vf=3), rec("v2", vf=3, version=2)], {"v1": 3, "v2": None}),
        # forgotten skeletons neither cut nor get cut
        (
            [
                rec("v1"),
                rec("f", vf=2, version=2, supersedes="v1", status="forgotten", since=3, value=""),
                rec("f2", vf=1, vu=9, version=3, status="forgotten", since=3, value=""),
                rec("v4", vf=5, version=4),
            ],
            {"v1": 5, "f": None, "f2": 9, "v4": None},
        ),
    ],
)
def test_it_derives_effective_ends(records, expected):
    """W11: the earliest of own valid_until, the first open-ended superseding record's
    valid_from, and the earliest later open-ended record of the slot with at least its
    authority — never before its own valid_from."""
    ends = effective_ends(records)
    assert ends == {k: None if v is None else at(v) for k, v in expected.items()}


def test_it_derives_effective_ends_per_value_slot_of_a_many_key():
    """W11: for a many key, only records of the same value slot cut each other."""
    records = [
        rec("jazz", key="user.likes", value="Jazz"),
        rec("rain", key="user.likes", value="rain", vf=2, version=2),
        rec("jazz2", key="user.likes", value="JAZZ", vf=4, version=3),
    ]
    assert effective_ends(records, many=True) == {"jazz": at(4), "rain": None, "jazz2": None}


def test_it_lists_history_by_valid_from_then_version():
    """W11: history order is (valid_from, version), whatever the write order."""
    records = [
        rec("c", vf=2, version=1),
        rec("a", vf=1, version=3),
        rec("b", vf=2, version=0),
        rec("a", vf=1, version=3),
    ]
    assert [r.id for r in history_order(records)] == ["a", "b", "c"]
