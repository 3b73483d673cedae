"""Catch up, never start over (docs/DESIGN.md, "Memory owns the turn's state"; SPEC §3 R1–R8,
§5 P1–P4, §7 I3, F7.2): two state holders standing for two workers follow one store through
random interleavings of writes, corrections, forgets (with the records they withhold),
releases, undos, registry edits and a clock that crosses window edges (R3, R5). Each catches
its state up with the rows changed after the version it holds — or reads it whole after a
removal — and resolves it key by key, reusing what still holds; what it answers is what a
fresh resolve of the store answers: the same resolution, projection, plan and `plan_hash`. No
database: the store stamps rows as `memory.triggers` does."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversations.scopes import Scope
from memory import current
from memory.catch_up import caught_up
from memory.current import (
    ContextState,
    KeyGroups,
    ResolveBasis,
    Resolved,
    group_of,
    resolve_context,
    resolve_keyed,
    slots_of,
)
from memory.domain import MemoryRecord, Tombstone, value_hash
from tests.memory.core.records import CHAR, CONV, OTHER_CONV, SECRET, USER, at, ctx
from turns.pipeline import plan_prompt
from turns.planner import PlanMessage, PlanParams

SCOPES = (
    Scope("user"),
    Scope("character", character=CHAR),
    Scope("conversation", conversation=CONV),
    Scope("scene", conversation=CONV, scene="greenhouse"),
    Scope("conversation", conversation=OTHER_CONV),  # outside the context: never read
)
SEEN = {scope.scope_id(USER) for scope in SCOPES[:4]}
KEYS = ("pet.name", "user.likes", "home.city")
VALUES = ("Rex", "tea", "Lisbon", "rex ")
AUTHORITIES = ("model-inferred", "rule-extracted", "user-confirmed", "user-corrected")
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True)


@dataclass
class Store:
    """The memory tables of one user as the triggers keep them: every row with the version
    at which it last changed, the user's version and the version of the last removal."""

    records: dict[str, tuple[MemoryRecord, int]] = field(default_factory=dict)
    tombstones: dict[str, tuple[Tombstone, int]] = field(default_factory=dict)
    retractions: list[tuple[tuple[str, str, str], object, int]] = field(default_factory=list)
    version: int = 0
    removed: int = 0
    many: frozenset[str] = frozenset({"user.likes"})
    labels: dict[str, str] = field(default_factory=dict)

    def bump(self, removal: bool = False) -> int:
        self.version += 1
        if removal:
            self.removed = self.version
        return self.version

    def read(self, since: int | None) -> ContextState:
        """What the turn's statement reads: the rows of the context's scopes changed after
        `since` (every row for None)."""
        floor = -1 if since is None else since
        return ContextState(
            [r for r, v in self.records.values() if v > floor and r.scope_id in SEEN],
            [t for t, v in self.tombstones.values() if v > floor],
            _latest(
                (slot, when) for slot, when, v in self.retractions if v > floor and slot[0] in SEEN
            ),
        )


def _latest(rows) -> dict:
    latest: dict = {}
    for slot, when in rows:
        if slot not in latest or when > latest[slot]:
            latest[slot] = when
    return latest


@dataclass
class Holder:
    """A worker's copy: the state at a version and the resolution it made last."""

    version: int | None = None
    state: ContextState = field(default_factory=lambda: ContextState([], [], {}))
    resolved: Resolved | None = None
    groups: int = 1  # how many groups of keys it resolves in (`memory.current.group_of`)
    # Makes its state's slots and groups each time, so catching up patches them, and resolves
    # by the groups (`groups_for` their number, not `groups`).
    slots: bool = False

    def catch_up(self, store: Store) -> None:
        if self.version is None or store.removed > self.version:
            self.state = store.read(None)
        else:
            self.state = caught_up(self.state, store.read(self.version))
        self.version = store.version
        if self.slots:
            assert self.state.by_slot is not None and self.state.by_group is not None


@st.composite
def operations(draw):
    kind = draw(
        st.sampled_from(
            (
                "write",
                "write",
                "correct",
                "forget",
                "release",
                "undo",
                "delete",
                "retract",
                "label",
                "many",
                "tick",
                "tick",
                "sync",
                "sync",
                "resolve",
                "resolve",
            )
        )
    )
    return kind, draw(st.integers(0, 1)), draw(st.integers(0, 10_000))


def _record(store: Store, seed: int, n: int) -> MemoryRecord:
    key = KEYS[seed % len(KEYS)]
    vf = (seed // 3) % 48
    vu = vf + (seed // 7) % 30 if seed % 4 == 0 else None
    ids = sorted(store.records)
    supersedes = ids[seed % len(ids)] if ids and seed % 5 == 0 else None
    return MemoryRecord(
        id=f"r{n:04d}",
        user=USER,
        key=key,
        value=VALUES[(seed // 11) % len(VALUES)],
        scope=SCOPES[(seed // 13) % len(SCOPES)],
        authority=AUTHORITIES[(seed // 17) % len(AUTHORITIES)],
        valid_from=at(vf),
        recorded_at=at(vf),
        evidence_time=at((seed // 19) % 48),
        version=n,
        status="expired" if seed % 23 == 0 else "active",
        status_since=at((seed // 29) % 60) if seed % 23 == 0 else None,
        confidence=((seed // 31) % 10) / 9,
        valid_until=None if vu is None else at(vu),
        supersedes=supersedes,
        sources=("m1",) if seed % 6 else (),
    )


def _apply(store: Store, holders: list[Holder], op, clock: list[float], n: int) -> None:
    kind, who, seed = op
    if kind == "write":
        record = _record(store, seed, n)
        writer = holders[who]
        # The writer holds the state it writes into: a turn writes into its context's scopes.
        read = writer.version == store.version and record.scope_id in SEEN
        store.records[record.id] = (record, store.bump())
        if read:
            _keep_own_write(writer, record)
    elif kind == "correct" and store.records:
        old, _ = store.records[sorted(store.records)[seed % len(store.records)]]
        closed = replace(
            old,
            valid_until=at(clock[0] + (seed % 5)),
            status="superseded",
            status_since=at(clock[0] + (seed % 7)),
        )
        if closed.valid_until < closed.valid_from:
            closed = replace(closed, valid_until=closed.valid_from)
        store.records[old.id] = (closed, store.bump())
    elif kind == "forget":
        key = KEYS[seed % len(KEYS)]
        scope_id = "*" if seed % 2 else SCOPES[(seed // 2) % 5].scope_id(USER)
        hashed = value_hash(SECRET, VALUES[seed % len(VALUES)]) if seed % 3 == 0 else None
        tomb = Tombstone(f"t{n:04d}", USER, scope_id, key, at(clock[0]), at(clock[0]), hashed)
        version = store.bump()
        store.tombstones[tomb.id] = (tomb, version)
        # F7.2: in the same transaction, links to the records of other keys holding the
        # value (here: some picked by the seed), each record stamped.
        for record, _ in list(store.records.values()):
            if record.key != key and (int(record.id[1:]) + seed) % 3:
                linked = replace(record, withheld_by=tuple(sorted({*record.withheld_by, tomb.id})))
                store.records[record.id] = (linked, version)
    elif kind == "release" and store.records:
        record, _ = store.records[sorted(store.records)[seed % len(store.records)]]
        store.records[record.id] = (replace(record, withheld_by=()), store.bump())
    elif kind == "undo" and store.tombstones:
        gone = sorted(store.tombstones)[seed % len(store.tombstones)]
        del store.tombstones[gone]
        for record, version in list(store.records.values()):
            if gone in record.withheld_by:
                kept = tuple(t for t in record.withheld_by if t != gone)
                store.records[record.id] = (replace(record, withheld_by=kept), version)
        store.bump(removal=True)
    elif kind == "delete" and store.records:
        del store.records[sorted(store.records)[seed % len(store.records)]]
        store.bump(removal=True)
    elif kind == "retract":
        slot = (SCOPES[seed % 4].scope_id(USER), KEYS[seed % len(KEYS)], "")
        store.retractions.append((slot, at(clock[0]), store.bump()))
    elif kind == "label":
        key = KEYS[seed % len(KEYS)]
        store.labels = {**store.labels, key: f"label {seed % 3}"}
    elif kind == "many":
        store.many = store.many ^ {KEYS[seed % len(KEYS)]}
    elif kind == "tick":
        clock[0] += seed % 13 - 2  # forward mostly, back at times: windows are crossed
    elif kind == "sync":
        holders[who].catch_up(store)
    else:
        _resolve_and_compare(store, holders[who], clock[0])


def _keep_own_write(writer: Holder, record) -> None:
    """`memory.state`: what a write left is kept at the version read before it (no version
    read back), its record the writer's own object; catching up later reads the row back as
    an equal but distinct object."""
    writer.state = caught_up(writer.state, ContextState([replace(record)], [], {}))


def test_it_reads_its_own_write_back_as_no_change():
    """A holder that kept what its write left at the version it read catches up with the
    row it wrote, finds it equal and keeps its own object: no group is resolved again."""
    store, holder = Store(), Holder(groups=4)
    for n, seed in enumerate((3, 4, 5, 6)):
        record = _record(store, seed, n)
        store.records[record.id] = (replace(record, supersedes=None), store.bump())
    _resolve_and_compare(store, holder, 30)
    record = replace(_record(store, 27, 99), key="home.city", supersedes=None)
    store.records[record.id] = (record, store.bump())
    _keep_own_write(holder, record)
    _resolve_and_compare(store, holder, 30)  # the pass that wrote resolves its new group
    before, kept = dict(holder.resolved.parts), holder.state.records[-1]
    holder.version -= 1  # kept at the version read before the write
    _resolve_and_compare(store, holder, 30)
    assert holder.state.records[-1] is kept and kept is not store.records[record.id][0]
    assert all(holder.resolved.parts[index] is part for index, part in before.items())


def _resolve_and_compare(store: Store, holder: Holder, now: float) -> None:
    context = ctx(now, scene="greenhouse")
    basis = ResolveBasis(
        many_keys=store.many, labels=store.labels, secret=SECRET, likely=0.85, uncertain=0.5
    )
    holder.catch_up(store)
    resolved = resolve_keyed(
        holder.state.records,
        holder.state.tombstones,
        context,
        basis,
        earlier=holder.resolved,
        # The holder that keeps its slots resolves by the groups its state holds, patched.
        groups=None if holder.slots else holder.groups,
        by_group=holder.state.by_group if holder.slots else None,
    )
    holder.resolved = resolved
    fresh = store.read(None)
    assert sorted(r.id for r in holder.state.records) == sorted(r.id for r in fresh.records)
    assert holder.state.retractions == fresh.retractions
    resolution, projection = resolve_context(fresh.records, fresh.tombstones, context, basis)
    got = resolved.resolution
    assert got.active == resolution.active
    assert got.excluded == resolution.excluded
    assert got.trace == resolution.trace
    assert dict(got.explanations.items()) == dict(resolution.explanations.items())
    assert resolved.projection == projection
    ours, theirs = _plan(got, resolved.projection, now), _plan(resolution, projection, now)
    assert ours.plan == theirs.plan
    assert ours.snapshot.plan_hash == theirs.snapshot.plan_hash
    assert ours.snapshot.stored() == theirs.snapshot.stored()
    # The slots and groups held with the state (patched while catching up) are the store's.
    if holder.slots:
        assert _slot_ids(holder.state.by_slot) == _slot_ids(slots_of(fresh.records))
        assert _group_ids(holder.state.by_group) == _group_ids(KeyGroups.of(fresh.records))


def _group_ids(by_group) -> tuple:
    return by_group.count, {i: sorted(r.id for r in found) for i, found in by_group.groups.items()}


def _slot_ids(by_slot) -> dict:
    """Each non-empty slot's record ids in the order held (version order, W8)."""
    return {slot: [r.id for r in found] for slot, found in by_slot.items() if found}


def _plan(resolution, projection, now: float):
    return plan_prompt(
        current=PlanMessage("m-now", 5, "user", "what is my pet called"),
        history=(),
        fetch_content=lambda ids: {},
        resolution=resolution,
        projection=projection,
        params=PlanParams(budget=400, memory_share=0.5),
        pinned=frozenset(),
        use=True,
        now=at(now),
        decide=list,
        described=lambda d: d,
    )


@PROPERTY
@given(st.lists(operations(), min_size=5, max_size=60), st.sampled_from((1, 2, 4)))
def test_it_resolves_a_caught_up_state_as_a_fresh_read_of_the_store(ops, groups):
    """R1–R8, P1–P4, I3: whatever the interleaving, each holder's answer is a fresh one. The
    number of groups a state's records fall in grows with them as `groups_for` makes it
    grow at scale (doubling), here at a few records, so the held groups are patched, and
    made afresh when their number changes."""
    store, clock = Store(), [24.0]
    holders = [Holder(groups=groups), Holder(slots=True)]
    with mock.patch.object(current, "groups_for", _small_groups):
        for n, op in enumerate(ops):
            _apply(store, holders, op, clock, n)
        for holder in holders:
            _resolve_and_compare(store, holder, clock[0])


def _small_groups(n_records: int) -> int:
    return 1 if n_records < 4 else 2 if n_records < 8 else 4


def test_it_does_not_resolve_again_a_group_of_keys_that_did_not_change():
    """The point of catching up: a write to one key leaves every other group's share reused
    (the three keys fall in three of four groups)."""
    assert len({group_of(key, 4) for key in KEYS}) == 3
    store, holder = Store(), Holder(groups=4)
    for n, seed in enumerate((3, 4, 5, 6, 7, 8)):
        record = _record(store, seed, n)
        store.records[record.id] = (replace(record, supersedes=None), store.bump())
    _resolve_and_compare(store, holder, 30)
    before = dict(holder.resolved.parts)
    record = replace(_record(store, 27, 99), key="home.city", supersedes=None)
    store.records[record.id] = (record, store.bump())
    _resolve_and_compare(store, holder, 30)
    after, changed = holder.resolved.parts, group_of("home.city", 4)
    assert after[changed] is not before.get(changed)
    assert len(before) > 1
    assert all(after[index] is part for index, part in before.items() if index != changed)


def test_it_reaches_the_keys_a_registry_edit_names():
    """P4 and R6: a label edited, or a key made `many`, is seen at the next resolve of a
    state that did not change."""
    store, holder = Store(), Holder(groups=4)
    for n, value in enumerate(("Rex", "Max")):
        record = replace(_record(store, 6, n), key="pet.name", value=value, supersedes=None)
        store.records[record.id] = (replace(record, authority="user-confirmed"), store.bump())
    _resolve_and_compare(store, holder, 30)
    store.labels = {"pet.name": "Your pet"}
    _resolve_and_compare(store, holder, 30)
    assert [m.label for m in holder.resolved.projection.prompt] == ["Your pet"]
    store.many = store.many | {"pet.name"}
    _resolve_and_compare(store, holder, 30)
    assert len(holder.resolved.projection.prompt) == 2


def test_it_makes_the_slots_afresh_when_a_changed_record_left_its_slot():
    """A row that moved to another scope is a removal the triggers announce; should one come
    as a change, the slots are made again from the records, never patched wrongly."""
    first = _record(Store(), 0, 1)
    state = ContextState([first], [], {})
    assert _slot_ids(state.by_slot) == {(first.scope_id, first.key): [first.id]}
    moved = replace(first, scope=SCOPES[2] if first.scope != SCOPES[2] else SCOPES[1])
    later = caught_up(state, ContextState([moved], [], {}))
    assert "by_slot" not in later.__dict__
    assert _slot_ids(later.by_slot) == {(moved.scope_id, moved.key): [moved.id]}


@st.composite
def facts(draw):
    from memory.write_rules import Fact, Retract

    seed = draw(st.integers(0, 10_000))
    key = KEYS[seed % len(KEYS)]
    scope = SCOPES[(seed // 3) % 4]
    if seed % 7 == 0:
        return Retract(scope.scope_id(USER), key, key == "user.likes", VALUES[seed % 4])
    return Fact(
        key=key,
        value=VALUES[(seed // 5) % len(VALUES)],
        scope=scope,
        authority=AUTHORITIES[(seed // 11) % len(AUTHORITIES)],
        many=key == "user.likes",
        confidence=((seed // 13) % 10) / 9,
        valid_from=at((seed // 17) % 48) if seed % 2 else None,
        sources=("m1",) if seed % 3 else (),
        source_time=at(20) if seed % 3 else None,
    )


@PROPERTY
@given(
    st.lists(st.integers(0, 10_000), max_size=25),
    st.lists(facts(), max_size=8),
)
def test_it_decides_a_batch_against_held_slots_without_changing_them(seeds, writes):
    """W3–W10 against the slots a state holds: the batch copies a slot only when it takes it
    up, so the held slots are what they were after it; what it leaves — its records and its
    slots — is what a batch of freshly made slots leaves, and its slots are its records'."""
    from memory.write_rules import AuthorityConflict, Known, ValidationError, WriteBatch

    store = Store()
    for n, seed in enumerate(seeds):
        record = _record(store, seed, n)
        if record.scope_id in SEEN:
            store.records[record.id] = (record, store.bump())
    state = store.read(None)
    held = state.by_slot
    before = {slot: list(found) for slot, found in held.items()}

    def batch(slots):
        made = WriteBatch(
            Known(slots, state.tombstones, state.retractions),
            user=USER,
            now=at(30),
            secret=SECRET,
            new_id=iter(f"n{i:03d}" for i in range(100)).__next__,
            complete_scopes=SEEN,
        )
        for write in writes:
            try:
                made.add(write)
            except (ValidationError, AuthorityConflict):
                break
        return made

    ours, theirs = batch(held), batch(slots_of(state.records))
    assert {slot: list(found) for slot, found in held.items()} == before
    assert [r.id for r in ours.records()] == [r.id for r in theirs.records()]
    assert ours.records() == theirs.records()
    assert _slot_ids(ours.slots()) == _slot_ids(slots_of(ours.records()))
    if not ours.changed:  # the turn then resolves the records as read: the same ones
        assert sorted(ours.records(), key=_id) == sorted(state.records, key=_id)


def _id(record) -> str:
    return record.id


def _grouped_world():
    """Three keys in three of four groups, one record each, `pet.name`'s ending at hour 40."""
    store, holder = Store(), Holder(slots=True)
    for n, key in enumerate(KEYS):
        record = replace(_record(store, 4, n), key=key, supersedes=None, status="active")
        if key == "pet.name":
            record = replace(record, valid_from=at(0), valid_until=at(40))
        store.records[record.id] = (record, store.bump())
    return store, holder


@pytest.mark.parametrize("change", ["window", "tombstone"])
def test_it_resolves_again_an_unchanged_group_whose_window_or_tombstones_moved(change):
    """R3, R4: a group whose records are the very list they were is still resolved again when
    `now` left its window or a tombstone came for its keys, while a write elsewhere changed
    another group; the answer is the fresh one."""
    with mock.patch.object(current, "groups_for", lambda n: 4):
        store, holder = _grouped_world()
        _resolve_and_compare(store, holder, 30)
        pet = group_of("pet.name", 4)
        before = holder.resolved.parts[pet]
        record = replace(_record(store, 4, 50), key="home.city", supersedes=None)
        store.records[record.id] = (record, store.bump())
        now = 30
        if change == "window":
            now = 45  # pet.name's record ended at 40
        else:
            tomb = Tombstone("t1", USER, "*", "pet.name", at(30), at(30), None)
            store.tombstones[tomb.id] = (tomb, store.bump())
        _resolve_and_compare(store, holder, now)
        assert holder.resolved.parts[pet].resolution is not before.resolution


def test_it_reuses_an_untouched_group_by_its_list_alone():
    """The point of holding the groups: after a write to one key, a group no change touched
    is the very list it was and its share is reused as it was (no look at its records)."""
    with mock.patch.object(current, "groups_for", lambda n: 4):
        store, holder = _grouped_world()
        _resolve_and_compare(store, holder, 30)
        before = dict(holder.resolved.parts)
        lists = dict(holder.state.by_group.groups)
        record = replace(_record(store, 4, 50), key="home.city", supersedes=None)
        store.records[record.id] = (record, store.bump())
        looked = []
        real = current.KeyPart.holds
        with mock.patch.object(
            current.KeyPart, "holds", lambda part, *a: looked.append(part) or real(part, *a)
        ):
            _resolve_and_compare(store, holder, 30)
        city = group_of("home.city", 4)
        assert looked == [before[city]]  # only the touched group's records were looked at
        for index, part in before.items():
            if index != city:
                assert holder.state.by_group.groups[index] is lists[index]
                assert holder.resolved.parts[index].resolution is part.resolution
        assert holder.resolved.parts[city].resolution is not before[city].resolution
