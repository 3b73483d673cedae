"""Property-based tests of the pure resolver (R7) and normalisation (W12), with Hypothesis.

A world is a few records of one user in 2–3 scopes and two keys (`pet.name` is `one`,
`user.likes` is `many`), with random windows, authorities, versions, statuses
(active/forgotten), supersedes links inside a slot, a couple of tombstones and a random
`now`. "Crowded" worlds (two draws in three) put every record in one scoped key, where long
chains, temporary overrides and tombstones meet: that is where normalisation could go wrong.
Derandomized so CI sees the same examples every run."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from conversations.domain import Context
from conversations.scopes import Scope
from memory.domain import AUTHORITIES, MemoryRecord, Tombstone, normalise_value, value_hash
from memory.history import effective_ends
from memory.normalisation import apply_changes, plan_normalisation
from memory.resolver import resolve, resolve_slot

T0 = datetime(2026, 8, 1, tzinfo=UTC)
USER = "ana"
CHAR = "captain-rowan"
CONV = "6f1c3f0e-6a1d-4a57-9d0e-3b8c2f1a9e10"
SECRET = b"per-user-secret"
ONE, MANY = "pet.name", "user.likes"
MANY_KEYS = frozenset({MANY})
SCOPES = (
    Scope("user"),
    Scope("character", character=CHAR),
    Scope("conversation", conversation=CONV),
    Scope("scene", conversation=CONV, scene="greenhouse"),
)
VALUES = ("Rex", "rex ", "Jazz", "JAZZ", "rain")
PROPERTY = settings(max_examples=200, deadline=None, derandomize=True)


def hours(n: float) -> datetime:
    return T0 + timedelta(hours=n)


# A coarse grid of hours: times land exactly on window boundaries often.
times = st.integers(min_value=-1, max_value=9).map(hours)

# Strategies are built once: building them inside the draw loop dominates the run time.
_scope_sets = st.lists(st.integers(0, 3), min_size=2, max_size=3, unique=True)
_keys = st.sampled_from((ONE, MANY))
_keys_mostly_one = st.sampled_from((ONE, ONE, MANY))
_values = st.sampled_from(VALUES)
_authorities = st.sampled_from(AUTHORITIES)
_steps = st.integers(min_value=-2, max_value=2)
_lengths = st.none() | st.integers(min_value=0, max_value=4)
_versions = st.integers(min_value=1, max_value=4)
_scenes = st.sampled_from([None, "greenhouse", "downstairs"])
_INDEX = [st.integers(min_value=0, max_value=k) for k in range(16)]


def _pick(draw, options):
    return options[draw(_INDEX[len(options) - 1])]


@st.composite
def worlds(draw, crowded: bool = False):
    """(records, tombstones, context). `crowded` puts every record in one scoped key, so
    that long chains, temporary overrides, ties and tombstones meet in one slot often;
    otherwise records still crowd into the first scope and the `one` key."""
    scope_idx = draw(_scope_sets)
    crowded_key = draw(_keys)
    n = draw(st.integers(min_value=2, max_value=12) if crowded else _INDEX[12])
    n = max(n, 1)
    ids = draw(st.permutations([f"r{i:02d}" for i in range(n)]))
    records: list[MemoryRecord] = []
    for i in range(n):
        if crowded:
            scope, key = SCOPES[scope_idx[0]], crowded_key
        else:
            pick = draw(_INDEX[len(scope_idx) + 1])
            scope = SCOPES[scope_idx[max(0, pick - 2)]]
            key = draw(_keys_mostly_one)
        value = draw(_values)
        # Mostly written in valid-time order (later records start later), sometimes not.
        step = draw(_steps)
        if not records or step == -2:
            valid_from = draw(times)
        else:
            valid_from = min(hours(9), records[-1].valid_from + timedelta(hours=max(step, 0)))
        length = draw(_lengths)
        valid_until = None if length is None else valid_from + timedelta(hours=length)
        forgotten = draw(_INDEX[7 if crowded else 5]) == 0
        slot = [
            r.id
            for r in records
            if r.scope == scope
            and r.key == key
            and (key != MANY or normalise_value(r.value) == normalise_value(value))
        ]
        supersedes = None
        if slot and draw(_INDEX[3]):
            # mostly the slot's latest record (a chain), sometimes any, rarely a missing one
            supersedes = _pick(draw, [slot[-1], slot[-1], *slot, "gone"])
        records.append(
            MemoryRecord(
                id=ids[i],
                user=USER,
                key=key,
                value="" if forgotten else value,
                scope=scope,
                authority=draw(_authorities),
                valid_from=valid_from,
                recorded_at=valid_from,
                evidence_time=valid_from if draw(_INDEX[1]) else draw(times),
                version=draw(_versions),
                status="forgotten" if forgotten else "active",
                status_since=draw(times) if forgotten else None,
                confidence=1.0,
                valid_until=valid_until,
                supersedes=supersedes,
                sources=("m1",),
            )
        )
    tombstones = []
    for j in range(draw(_INDEX[2])):
        key = crowded_key if crowded else draw(_keys_mostly_one)
        scope_id = _pick(
            draw,
            [
                "*",
                SCOPES[scope_idx[0]].scope_id(USER),
                *(SCOPES[i].scope_id(USER) for i in scope_idx),
            ],
        )
        hashed = None
        if key == MANY and draw(_INDEX[1]):
            hashed = value_hash(SECRET, draw(_values))
        moment = draw(times)
        tombstones.append(Tombstone(f"t{j}", USER, scope_id, key, moment, moment, hashed))
    # A crowded world's scope should usually apply to the context, or R1 decides it all.
    scene = "greenhouse" if crowded and draw(_INDEX[2]) else draw(_scenes)
    context = Context(
        user=USER, character=CHAR, conversation=CONV, now=draw(moments(records)), scene=scene
    )
    return records, tombstones, context


def moments(records):
    """Any time on the grid, but mostly a record's boundary, where decisions flip."""
    edges = sorted(
        {r.valid_from for r in records}
        | {r.valid_until for r in records if r.valid_until is not None}
    )
    return st.sampled_from(edges) | times if edges else times


# Crowded worlds twice as often: chains and tombstones in one slot are where W12 can fail.
any_world = st.one_of(worlds(crowded=True), worlds(crowded=True), worlds())


def run(records, tombstones, context):
    return resolve(records, tombstones, context, many_keys=MANY_KEYS, secret=SECRET)


def decisions(resolution) -> dict[str, tuple[str, str]]:
    """id → (step, reason) for every record the resolution saw."""
    return {i: (e.step, e.reason) for i, e in resolution.explanations.items()}


def skip_marked(records, now):
    """What a database query that skips rows marked superseded/expired before `now` returns."""
    return [r for r in records if r.status not in ("superseded", "expired") or r.status_since > now]


def assert_same_resolution(reference, records, tombstones, context):
    """W12: the active set and every reason (and step) are unchanged; rows the database
    skipped are simply absent."""
    got = run(records, tombstones, context)
    assert [r.id for r in got.active] == [r.id for r in reference.active]
    expected = decisions(reference)
    assert decisions(got) == {i: expected[i] for i in decisions(got)}


@PROPERTY
@given(world=any_world, data=st.data())
def test_it_ignores_input_order_and_duplicates(world, data):
    """R7: any order, with any records and tombstones repeated, gives the same result."""
    records, tombstones, context = world
    reference = run(records, tombstones, context)
    extra = data.draw(st.lists(st.sampled_from(records), max_size=4))
    shuffled = data.draw(st.permutations(records + extra))
    tombs = data.draw(st.permutations(tombstones + tombstones[:1]))
    again = run(shuffled, tombs, context)
    assert again.active == reference.active
    assert again.excluded == reference.excluded
    assert again.trace == reference.trace
    assert again.explanations == reference.explanations


@PROPERTY
@given(world=any_world)
def test_it_decides_every_record_exactly_once(world):
    """R3 §3 output / R8: each record is active or excluded with one reason, and explained."""
    records, tombstones, context = world
    resolution = run(records, tombstones, context)
    active = [r.id for r in resolution.active]
    excluded = [e.id for e in resolution.excluded]
    assert len(active) + len(excluded) == len({r.id for r in records})
    assert set(active) | set(excluded) == {r.id for r in records}
    assert set(resolution.explanations) == {r.id for r in records}
    assert excluded == sorted(excluded)
    assert [(r.key, r.id) for r in resolution.active] == sorted(
        (r.key, r.id) for r in resolution.active
    )
    counted = sum(v for k, v in resolution.trace.items() if k.startswith("excluded_"))
    assert counted == len(excluded) and resolution.trace["active"] == len(active)


@PROPERTY
@given(world=any_world)
def test_it_keeps_at_most_one_active_record_per_slot(world):
    """R6: one winner per scoped key, per value slot for a many key."""
    records, tombstones, context = world
    slots = [
        (r.scope_id, r.key, r.value_slot(r.key in MANY_KEYS))
        for r in run(records, tombstones, context).active
    ]
    assert len(slots) == len(set(slots))


@PROPERTY
@given(world=any_world)
def test_it_never_answers_a_record_outside_its_window(world):
    """R3: no active record starts after now or ends at or before now; none is forgotten."""
    records, tombstones, context = world
    for record in run(records, tombstones, context).active:
        assert record.valid_from <= context.now
        assert record.valid_until is None or record.valid_until > context.now
        assert record.status != "forgotten"


def critical_times(records, *extra):
    """Every `now` at which a resolution or a plan can change: decisions only compare `now`
    with valid_from, valid_until and status_since, so checking each of them (and an instant
    before all of them) covers every possible `now`."""
    edges = set(extra)
    for r in records:
        edges.add(r.valid_from)
        if r.valid_until is not None:
            edges.add(r.valid_until)
        if r.status_since is not None:
            edges.add(r.status_since)
    return sorted(edges | {min(edges) - timedelta(hours=1)})


def assert_resolutions_kept(original, changed, tombstones, context):
    """W12 at every possible now: `changed` (normalised records) resolves like `original`,
    and so does `changed` with the marked rows a database query would skip."""
    for now in critical_times([*original, *changed], context.now):
        at_now = replace(context, now=now)
        reference = run(original, tombstones, at_now)
        assert_same_resolution(reference, changed, tombstones, at_now)
        assert_same_resolution(reference, skip_marked(changed, now), tombstones, at_now)


@PROPERTY
@given(world=any_world)
def test_it_finds_the_same_slot_winner_as_resolve(world):
    """resolve_slot (W5/W6) agrees with resolve (R2–R6) on every slot the context sees."""
    records, tombstones, context = world
    resolution = run(records, tombstones, context)

    def slot_of(r):
        return (r.scope_id, r.key, r.value_slot(r.key in MANY_KEYS))

    winners = {slot_of(r): r.id for r in resolution.active}
    groups: dict = {}
    for record in records:
        if record.status != "forgotten" and context.matches(record.scope, record.user):
            groups.setdefault(slot_of(record), []).append(record)
    for slot, group in groups.items():
        winner = resolve_slot(
            group, context.now, tombstones=tombstones, many=slot[1] in MANY_KEYS, secret=SECRET
        )
        assert (winner.id if winner else None) == winners.get(slot)


@PROPERTY
@given(world=any_world, normalised_at=times)
def test_it_never_changes_a_resolution_by_normalising(world, normalised_at):
    """W12: normalising at a time t never changes the resolution at any (independent) now —
    active set and every reason — also when the database skips marked rows. Every
    normalisation time that can make a difference is tried as well."""
    records, tombstones, context = world
    for moment in critical_times(records, normalised_at):
        normalised = apply_changes(records, plan_normalisation(records, moment))
        assert_resolutions_kept(records, normalised, tombstones, context)


@PROPERTY
@given(world=any_world, data=st.data())
def test_it_never_changes_a_resolution_after_partial_or_repeated_runs(world, data):
    """W12: safe after any partial run (any prefix of a plan applied) followed by another
    run at any other time (earlier or later)."""
    records, tombstones, context = world
    first, second = data.draw(moments(records)), data.draw(moments(records))
    plan = plan_normalisation(records, first)
    cut = data.draw(st.integers(min_value=0, max_value=len(plan)))
    partial = apply_changes(records, plan[:cut])
    assert_resolutions_kept(records, partial, tombstones, context)
    again = apply_changes(partial, plan_normalisation(partial, second))
    assert_resolutions_kept(records, again, tombstones, context)


@PROPERTY
@given(world=any_world, normalised_at=times, data=st.data())
def test_it_plans_normalisation_idempotently(world, normalised_at, data):
    """W12: planning again after applying a plan (or a prefix then the rest) gives []."""
    records, _, _ = world
    plan = plan_normalisation(records, normalised_at)
    assert plan_normalisation(apply_changes(records, plan), normalised_at) == []
    cut = data.draw(st.integers(min_value=0, max_value=len(plan)))
    partial = apply_changes(records, plan[:cut])
    rest = plan_normalisation(partial, normalised_at)
    assert plan_normalisation(apply_changes(partial, rest), normalised_at) == []
    # never touches forgotten rows, never re-marks a marked one
    by_id = {r.id: r for r in records}
    for change in plan:
        assert by_id[change.id].status == "active"


@PROPERTY
@given(world=any_world)
def test_it_keeps_effective_ends_inside_each_window(world):
    """W11: an effective end is never before the record's valid_from nor after its own
    valid_until."""
    records, _, _ = world
    for key in (ONE, MANY):
        for scope in SCOPES:
            group = [r for r in records if r.key == key and r.scope == scope]
            ends = effective_ends(group, many=key in MANY_KEYS)
            assert set(ends) == {r.id for r in group}
            for record in group:
                end = ends[record.id]
                if record.valid_until is not None:
                    assert end is not None and end <= record.valid_until
                if end is not None:
                    assert end >= record.valid_from
