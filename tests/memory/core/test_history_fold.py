"""The slot's history as a person reads it (`memory.history.fold`; SPEC W11, §2, F2): pure,
no database. Each case is the resolver's history order and effective ends of a few records,
and the values a person is shown."""

from datetime import UTC, datetime

from conversations.scopes import Scope
from memory.domain import MemoryRecord
from memory.history import confirmations, effective_ends, fold, history_order


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC)


def rec(
    id_,
    value,
    start,
    *,
    version=1,
    authority="user-confirmed",
    supersedes=None,
    valid_until=None,
    status="active",
    since=None,
    key="plant.name",
):
    return MemoryRecord(
        id=id_,
        user="sam",
        key=key,
        value=value,
        scope=Scope("user"),
        authority=authority,
        valid_from=start,
        recorded_at=start,
        evidence_time=start,
        version=version,
        status=status,
        status_since=since,
        valid_until=valid_until,
        supersedes=supersedes,
    )


def shown(records, many=False):
    ordered = history_order(records)
    entries = fold(ordered, effective_ends(records, many=many), many=many)
    return [
        (e.record.id, e.last.id, e.end, e.gap_before and (e.gap_before[0], e.gap_before[1].id))
        for e in entries
    ]


def test_it_shows_a_replaced_value_ending_where_its_correction_starts():
    """W11: Harbor holds until Marlowe, which is still open."""
    harbor = rec("a", "Harbor", at(1))
    marlowe = rec("b", "Marlowe", at(3), version=2, supersedes="a", authority="user-corrected")
    assert shown([harbor, marlowe]) == [("a", "a", at(3), None), ("b", "b", None, None)]


def test_it_folds_a_confirmation_into_the_value_it_confirmed():
    """§2: confirming Harbor (same value, the user's word) is not a new value."""
    harbor = rec("a", "Harbor", at(1), authority="rule-extracted")
    confirmed = rec("b", "harbor", at(2), version=2, supersedes="a")
    assert confirmations([harbor, confirmed]) == {"a": confirmed}
    assert shown([harbor, confirmed]) == [("a", "b", None, None)]


def test_it_counts_no_correction_to_another_value_as_a_confirmation():
    harbor = rec("a", "Harbor", at(1))
    marlowe = rec("b", "Marlowe", at(2), version=2, supersedes="a")
    assert confirmations([harbor, marlowe]) == {}


def test_it_confirms_nothing_by_an_inference_of_the_same_value():
    """Only the user's own word confirms (USER_AUTHORITIES)."""
    harbor = rec("a", "Harbor", at(1))
    again = rec("b", "Harbor", at(2), version=2, supersedes="a", authority="rule-extracted")
    assert confirmations([harbor, again]) == {}


def test_it_ends_a_forgotten_value_when_forgotten_and_confirms_nothing_by_it():
    """F2: the skeleton keeps its window, but nothing of it held after the forget."""
    harbor = rec("a", "", at(1), status="forgotten", since=at(4))
    again = rec("b", "", at(2), version=2, supersedes="a", status="forgotten", since=at(4))
    assert confirmations([harbor, again]) == {}
    assert shown([harbor])[0][2] == at(4)


def test_it_shows_a_time_with_no_value_as_a_gap_naming_what_ended():
    """A value with a window of its own ends; the next starts later: a gap between them."""
    summer = rec("a", "Harbor", at(1), valid_until=at(5))
    later = rec("b", "Marlowe", at(9), version=2)
    assert shown([summer, later]) == [("a", "a", at(5), None), ("b", "b", None, (at(5), "a"))]


def test_it_gives_a_many_key_a_gap_per_value_slot_and_joins_no_forgotten_value():
    jazz = rec("a", "jazz", at(1), valid_until=at(2), key="user.likes")
    rock = rec("b", "rock", at(3), version=2, key="user.likes")
    gone = rec("c", "", at(3), version=3, key="user.likes", status="forgotten", since=at(4))
    jazz_again = rec("d", "Jazz", at(6), version=4, key="user.likes")
    rows = shown([jazz, rock, gone, jazz_again], many=True)
    gaps = {row[0]: row[3] for row in rows}
    assert gaps == {"a": None, "b": None, "c": None, "d": (at(2), "a")}


def test_it_folds_the_same_whatever_order_the_records_come_in():
    records = [
        rec("a", "Harbor", at(1), authority="rule-extracted"),
        rec("b", "Harbor", at(2), version=2, supersedes="a"),
        rec("c", "Marlowe", at(4), version=3, supersedes="b", authority="user-corrected"),
    ]
    assert shown(records) == shown(list(reversed(records))) == shown(records[1:] + records[:1])
