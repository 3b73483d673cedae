"""SPEC E1: a record's state is its resolution at `now` in its own scope — the resolver's
steps R2–R6 with the record's scope as the context, so R1 always passes — with the R8 detail
`{"rule", "by", "since"}`. Pure: no database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given

from conversations.domain import Context
from conversations.scopes import Scope
from memory.domain import STATES, MemoryRecord, RecordState, Tombstone, value_hash
from memory.normalisation import apply_changes, plan_normalisation
from memory.resolver import record_states, resolve
from tests.memory.core.test_resolver_properties import MANY_KEYS, PROPERTY, SECRET, worlds

T0 = datetime(2026, 8, 1, tzinfo=UTC)
USER = "ana"
EVERYWHERE = Scope("user")


def h(n: float) -> datetime:
    return T0 + timedelta(hours=n)


def rec(
    id_,
    value="Rex",
    *,
    key="pet.name",
    scope=EVERYWHERE,
    authority="rule-extracted",
    start=0,
    until=None,
    version=1,
    **extra,
) -> MemoryRecord:
    return MemoryRecord(
        id=id_,
        user=USER,
        key=key,
        value=value,
        scope=scope,
        authority=authority,
        valid_from=h(start),
        recorded_at=h(start),
        evidence_time=h(start),
        version=version,
        valid_until=None if until is None else h(until),
        **extra,
    )


def states(records, now=5, tombstones=(), many=frozenset()):
    return record_states(records, tombstones, h(now), many_keys=many, secret=SECRET)


def test_it_gives_an_active_record_no_detail_e1():
    assert states([rec("a")]) == {"a": RecordState("active", None, None, None)}


def test_it_says_a_record_past_valid_until_is_expired_even_when_stored_active_e1():
    """E1/W12: the stored status may lag; the state does not."""
    assert states([rec("a", until=3)])["a"] == RecordState("expired", "R3", None, h(3))


def test_it_counts_a_stored_expired_mark_from_its_status_since_e1():
    a = rec("a", status="expired", status_since=h(4))
    assert states([a], now=5)["a"] == RecordState("expired", "R3", None, h(4))
    assert states([a], now=3)["a"].state == "active"


def test_it_says_a_future_record_is_not_yet_valid_e1():
    assert states([rec("a", start=7)])["a"] == RecordState("not-yet-valid", "R3", None, None)


def test_it_says_a_stored_active_record_named_by_a_correction_is_superseded_e1():
    """E1/R5: superseded by the correcting record, since it started (the later start of the
    two), while the stored status still says active."""
    old = rec("a", start=0)
    new = rec("b", "Max", start=2, version=2, authority="user-corrected", supersedes="a")
    got = states([old, new])
    assert got["a"] == RecordState("superseded", "R5", "b", h(2))
    assert got["b"].state == "active"


def test_it_names_the_superseding_record_of_a_stored_superseded_mark_e1():
    old = rec("a", status="superseded", status_since=h(2))
    new = rec("b", "Max", start=2, version=2, until=4, supersedes="a")  # ended: no longer hides
    got = states([old, new])
    assert got["a"] == RecordState("superseded", "R5", "b", h(2))
    assert got["b"] == RecordState("expired", "R3", None, h(4))


def test_it_says_a_loser_of_r6_is_lower_precedence_by_the_winner_e1():
    low = rec("a", start=0, authority="model-inferred")
    high = rec("b", "Max", start=3, authority="user-confirmed", version=2)
    got = states([low, high])
    assert got["a"] == RecordState("lower-precedence", "R6", "b", h(3))


def test_it_says_forgotten_by_stored_status_or_by_a_tombstone_e1():
    skeleton = rec("a", "", status="forgotten", status_since=h(1))
    blocked = rec("b", key="dog.name")
    tomb = Tombstone("t1", USER, "*", "dog.name", forgotten_at=h(2), blocks_sources_before=h(2))
    got = states([skeleton, blocked], tombstones=[tomb])
    assert got["a"] == RecordState("forgotten", "R2", None, h(1))
    assert got["b"] == RecordState("forgotten", "R4", None, h(2))


def test_it_resolves_a_scene_record_in_its_own_scope_e1():
    """E1: R1 always passes — a scene record has a state although most contexts would not
    see it at all."""
    scene = Scope("scene", conversation="c1", scene="greenhouse")
    got = states([rec("a", scope=scene), rec("b", "Max", scope=Scope("user"))])
    assert got == {"a": RecordState("active"), "b": RecordState("active")}


def test_it_keeps_a_many_keys_value_slots_separate_e1():
    likes = [
        rec("a", "jazz", key="user.likes"),
        rec("b", "rain", key="user.likes", version=2, start=1),
    ]
    got = states(likes, many={"user.likes"})
    assert {i: s.state for i, s in got.items()} == {"a": "active", "b": "active"}
    assert states(likes)["a"].state == "lower-precedence"  # as a `one` key they would compete


def test_it_checks_a_value_level_tombstone_with_the_secret_e1():
    likes = [rec("a", "jazz", key="user.likes"), rec("b", "rain", key="user.likes", version=2)]
    tomb = Tombstone(
        "t1",
        USER,
        "user:ana",
        "user.likes",
        forgotten_at=h(2),
        blocks_sources_before=h(2),
        value_hash=value_hash(SECRET, "Jazz"),
    )
    got = states(likes, tombstones=[tomb], many={"user.likes"})
    assert (got["a"].state, got["b"].state) == ("forgotten", "active")


@PROPERTY
@given(worlds())
def test_it_gives_the_resolvers_reason_in_the_records_own_scope_e1(world):
    """E1: for every record, `state` is exactly what `resolve` says of it for a context made
    of its own scope (its R8 step too), whatever the world — no second implementation."""
    records, tombstones, context = world
    got = record_states(records, tombstones, context.now, many_keys=MANY_KEYS, secret=SECRET)
    assert set(got) == {r.id for r in records}
    for record in {r.id: r for r in records}.values():
        scope = record.scope
        own = Context(
            user=record.user,
            character=scope.character,
            conversation=scope.conversation,
            scene=scope.scene,
            now=context.now,
        )
        why = resolve(records, tombstones, own, many_keys=MANY_KEYS, secret=SECRET).explain(
            record.id
        )
        state = got[record.id]
        assert state.state in STATES
        assert state.state == ("active" if why.step == "active" else why.reason)
        assert state.rule == (None if why.step == "active" else why.step)
        if state.rule in ("R5", "R6") and state.by is not None:
            assert state.by in why.detail or why.detail.startswith("stored")


@PROPERTY
@given(worlds(crowded=True))
def test_it_never_changes_a_state_by_normalisation_e1(world):
    """E1 with W12: writing the stored statuses never changes any record's state."""
    records, tombstones, context = world
    before = record_states(records, tombstones, context.now, many_keys=MANY_KEYS, secret=SECRET)
    marked = apply_changes(records, plan_normalisation(records, context.now))
    after = record_states(marked, tombstones, context.now, many_keys=MANY_KEYS, secret=SECRET)
    assert {i: s.state for i, s in after.items()} == {i: s.state for i, s in before.items()}


def test_it_gives_the_same_states_whatever_the_duplicates_and_order_e1():
    """R7 holds for states too."""
    records = [rec("a"), rec("b", "Max", start=2, version=2, supersedes="a")]
    assert states(records) == states([*reversed(records), replace(records[0])])
