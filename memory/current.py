"""A context's memory as the pure pass takes it — standard library only (docs/DESIGN.md,
habit 1): the stored state of the context's scopes and the resolution made of it.

`memory.state` owns the per-process copy of both (read once at a memory version, kept after a
turn's writes); the turn's pure pass (`turns.pipeline`) resolves through `resolve_context`,
which answers an earlier resolution again while it still holds."""

from __future__ import annotations

import operator
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from itertools import chain

from conversations.domain import Context

from .domain import RESOLVER_VERSION, MemoryRecord, Projection, Resolution, Tombstone
from .projection import project, prompt_order, withholding_in
from .reasons import Exclusions, Explanations, rfc3339
from .resolver import RESOLVER_REASONS, at_time, resolve, stable_window


@dataclass(frozen=True)
class ContextState:
    """Every stored record of a context's scopes (forgotten skeletons included, sources
    included), every tombstone of the user, and the latest W10 time per slot of those scopes:
    what a resolve for the context reads and what any write into those scopes needs."""

    records: list[MemoryRecord]
    tombstones: list[Tombstone]
    retractions: dict[tuple[str, str, str], datetime]

    @cached_property
    def by_slot(self) -> Mapping[tuple[str, str], Sequence[MemoryRecord]]:
        """The records by scoped key `(scope_id, key)`, each slot's in version order (W8):
        what a batch of writes decides against (`memory.write_rules.Known`). Made once per state
        and held with it (`with_slots`, `caught_up`), so a turn that changed nothing does not
        sort the stored records again. A slot may map to an empty sequence."""
        return slots_of(self.records)

    @cached_property
    def by_group(self) -> KeyGroups:
        """The records by group of keys (`group_of`, `groups_for` their number): what
        `resolve_keyed` resolves group by group. Held with the state and patched like
        `by_slot`, so a group no change touched is the very list it was and its share of the
        resolution is reused without looking at its records."""
        return KeyGroups.of(self.records)

    @classmethod
    def with_slots(
        cls, records, tombstones, retractions, by_slot, by_group: KeyGroups | None = None
    ) -> ContextState:
        """A state whose `by_slot` (and `by_group`) are already known (a write batch's as it
        left them): `by_slot` must hold, slot by slot, what `slots_of(records)` gives, and
        may hold empty slots besides; `by_group`, group by group, the records `KeyGroups.of`
        gives, in any order."""
        state = cls(records, tombstones, retractions)
        state.__dict__["by_slot"] = by_slot
        if by_group is not None:
            state.__dict__["by_group"] = by_group
        return state


@dataclass(frozen=True)
class KeyGroups:
    """Records by group of keys: `count` groups (`groups_for` the number of records), each
    group's records in a list never changed once made (`resolve_keyed` knows an unchanged
    group by the identity of its list)."""

    count: int
    groups: Mapping[int, list[MemoryRecord]]

    @classmethod
    def of(cls, records: Sequence[MemoryRecord]) -> KeyGroups:
        count = groups_for(len(records))
        return cls(count, cls.of_count(records, count))

    @staticmethod
    def of_count(records: Sequence[MemoryRecord], count: int) -> dict[int, list[MemoryRecord]]:
        """`records` in `count` groups by key, each group's in the order given."""
        groups: dict[int, list[MemoryRecord]] = {}
        index_of: dict[str, int] = {}
        for record in records:
            key = record.key
            index = index_of.get(key)
            if index is None:
                index = index_of[key] = group_of(key, count)
            found = groups.get(index)
            if found is None:
                groups[index] = [record]
            else:
                found.append(record)
        return groups

    def patched(self, n_records: int, changed: Sequence[MemoryRecord]) -> KeyGroups | None:
        """These groups, for a state of `n_records` records, with `changed` put in: a record
        of an id held in its group replaces it, a new one is added; a group nothing touched
        is the very list it was. None when the number of groups changes with `n_records` or
        the groups would not hold `n_records` records (a changed record was held outside the
        group its key names): the caller groups afresh."""
        if groups_for(n_records) != self.count:
            return None
        touched: dict[int, dict[str, MemoryRecord]] = {}
        for record in changed:
            touched.setdefault(group_of(record.key, self.count), {})[record.id] = record
        groups = dict(self.groups)
        for index, rows in touched.items():
            found = [rows.pop(record.id, record) for record in groups.get(index, ())]
            found += rows.values()
            groups[index] = found
        if sum(map(len, groups.values())) != n_records:
            return None
        return KeyGroups(self.count, groups)


EMPTY = ContextState([], [], {})


def slots_of(records: Sequence[MemoryRecord]) -> dict[tuple[str, str], list[MemoryRecord]]:
    """`records` by scoped key, each slot's in version order (ties keep the given order)."""
    by_slot: dict[tuple[str, str], list[MemoryRecord]] = {}
    for record in records:
        by_slot.setdefault((record.scope_id, record.key), []).append(record)
    for found in by_slot.values():
        if len(found) > 1:
            found.sort(key=_version)
    return by_slot


_version = operator.attrgetter("version")


@dataclass(frozen=True)
class ResolveBasis:
    """What a context's records are resolved and projected with besides themselves and the
    tombstones: the registry's `many` keys (R6, P3) and labels (P4), the user's secret (R6's
    value slots) and P2's certainty thresholds. A resolution is answered again only under the
    very registry objects it was made with (`Resolved.made_with`)."""

    many_keys: frozenset[str]
    labels: Mapping[str, str]
    secret: bytes
    likely: float
    uncertain: float

    def resolve(
        self, records: Sequence[MemoryRecord], tombstones: Sequence[Tombstone], context: Context
    ) -> Resolution:
        """R1–R8 (`memory.resolver.resolve`)."""
        return resolve(records, tombstones, context, many_keys=self.many_keys, secret=self.secret)

    def project(self, active, withholding: frozenset[str] = frozenset()) -> Projection:
        """F7.2 and P1–P4 of the resolver's `active` records (`memory.projection.project`)."""
        return project(
            active,
            labels=self.labels,
            many_keys=self.many_keys,
            likely=self.likely,
            uncertain=self.uncertain,
            withholding=withholding,
        )


@dataclass(frozen=True)
class Resolved:
    """A resolution and projection of some records made at a time of `window`, the valid
    times `[lo, hi)` over which they answer as they did (`memory.resolver.stable_window`)."""

    window: tuple[datetime | None, datetime | None]
    resolution: Resolution
    projection: Projection
    # Made by groups of keys (`resolve_keyed`): each group's share, what they were made of
    # and with (the secret, the certainty thresholds, the number of groups); a group's share
    # is reused while it holds.
    parts: Mapping[int, KeyPart] = field(default_factory=dict)
    records: tuple = ()
    tombstones: Sequence = ()
    many_keys: frozenset | None = None
    labels: Mapping | None = None
    settings: tuple = ()

    @classmethod
    def made(
        cls,
        records: Sequence[MemoryRecord],
        now: datetime,
        resolution: Resolution,
        projection: Projection,
    ) -> Resolved:
        return cls(stable_window(records, now), resolution, projection)

    def made_with(self, many_keys, labels, tombstones) -> bool:
        """Whether this was made under these very registry entries and tombstones."""
        return (
            self.many_keys is many_keys and self.labels is labels and self.tombstones is tombstones
        )

    def at(self, now: datetime) -> tuple[Resolution, Projection] | None:
        """The same answer at `now` when `now` lies in the window (R3 and R5 are the only
        steps that look at `now`), else None."""
        lo, hi = self.window
        if (lo is not None and now < lo) or (hi is not None and now >= hi):
            return None
        return at_time(self.resolution, now), self.projection


def resolve_context(
    records: Sequence[MemoryRecord],
    tombstones: Sequence[Tombstone],
    context: Context,
    basis: ResolveBasis,
    *,
    earlier: Resolved | None = None,
) -> tuple[Resolution, Projection]:
    """R1–R8 and P1–P4 for the context: `earlier` answered again when it is a resolution of
    these very records and holds at the context's time, else `resolve` and `project`."""
    if earlier is not None:
        reused = earlier.at(context.now)
        if reused is not None:
            return reused
    resolution = basis.resolve(records, tombstones, context)
    return resolution, basis.project(resolution.active, withholding_in(tombstones, context))


# ---------------------------------------------------------------------------------------------
# A context resolved by groups of keys: what changed is resolved again, what did not is reused


@dataclass(frozen=True)
class KeyPart:
    """The share of a context's resolution of one group of keys (`group_of`): its records
    and tombstones (the very objects), what of the registry it was made with (per key:
    `many`, label), the valid times over which it answers as it did, its resolution and
    projection, and the records it names in `supersedes` outside its own (R5 looks across
    keys only through these)."""

    records: tuple[MemoryRecord, ...]
    tombstones: tuple[Tombstone, ...]
    made_with: tuple
    window: tuple[datetime | None, datetime | None]
    resolution: Resolution
    projection: Projection
    outside: frozenset[str]
    prompt_order: tuple  # the planner's order (I3) of `projection.prompt`, item by item
    # The group's list it was last found to hold (`KeyGroups`), compared by identity.
    source: object = field(default=None, compare=False)

    def from_list(self, grouped: list[MemoryRecord]) -> KeyPart:
        """This share, noted as the one of the group's list `grouped` (`KeyGroups`)."""
        return self if self.source is grouped else replace(self, source=grouped)

    def within(self, now: datetime) -> bool:
        lo, hi = self.window
        return (lo is None or now >= lo) and (hi is None or now < hi)

    def holds(self, records, tombstones, made_with, now: datetime) -> bool:
        if not self.within(now):
            return False
        return (
            made_with == self.made_with
            and _same(self.records, records)
            and _same(self.tombstones, tombstones)
        )


def _same(held: tuple, given: list) -> bool:
    """The same objects, in any order."""
    if len(held) != len(given):
        return False
    if all(map(operator.is_, held, given)):
        return True
    return {id(row) for row in held} == {id(row) for row in given}


def groups_for(n_records: int) -> int:
    """How many groups of keys a context of `n_records` records is resolved in: the largest
    power of two up to 64 that leaves 256 records or more a group (one group below 512
    records), so the count changes, and every group is resolved again, only when the
    records double or halve. A resolve costs about as much per group as per record of a
    few hundred: fewer, larger groups would resolve more again per change, more, smaller
    ones would cost more when every group must be resolved."""
    groups = 1
    while groups < 64 and groups * 256 <= n_records:
        groups *= 2
    return groups


def group_of(key: str, groups: int) -> int:
    """A key's group: the same in every process and every turn (CRC-32 of the key)."""
    return zlib.crc32(key.encode()) % groups if groups > 1 else 0


def resolve_keyed(
    records: Sequence[MemoryRecord],
    tombstones: Sequence[Tombstone],
    context: Context,
    basis: ResolveBasis,
    *,
    earlier: Resolved | None = None,
    groups: int | None = None,
    by_group: KeyGroups | None = None,
) -> Resolved:
    """What `resolve_context` answers, made by groups of keys: R1–R6 never look across keys
    but for R5's `supersedes` (R4's tombstones, R6's slots and P3's shadowing are per key),
    so the context's resolution is the union of its groups' — `active` in (key, id) order,
    `excluded` in id order, the trace's counts summed — and its projection the union of
    theirs in the planner's order (I3). A group of `earlier` whose records and tombstones are
    the very objects they were, under the same registry entries, at a `now` inside its window
    (R3, R5), is reused as it is; only the others are resolved again. Where a record names
    one of another group in `supersedes`, the whole context is resolved at once. Ids are
    unique (they are primary keys), as in every stored state. `groups`: how many groups
    (default `groups_for` the number of records). `by_group`: `records` by group as a state
    holds them (`ContextState.by_group`); a group whose list is the very one `earlier` was
    made of, under the very registry and tombstones, is reused without a look at its
    records while `now` stays in its window."""
    many_keys, labels = basis.many_keys, basis.labels
    settings = (basis.secret, basis.likely, basis.uncertain)
    now = context.now
    groups, by_group = _grouping(len(records), groups, by_group)
    if earlier is not None and earlier.settings != (*settings, groups):
        earlier = None
    same_inputs = earlier is not None and earlier.made_with(many_keys, labels, tombstones)
    if same_inputs and _same_order(earlier.records, records):
        reused = earlier.at(now)
        if reused is not None:
            return replace(earlier, resolution=reused[0], records=tuple(records))
    making = _GroupMaking(context, tombstones, basis, groups)
    parts, changed = making.parts(
        by_group.groups if by_group is not None else KeyGroups.of_count(records, groups),
        earlier.parts if earlier is not None else {},
        held=by_group is not None,
        # A group's list that is the very one its earlier share was made of, under the same
        # registry and tombstones, holds what it held: only its window is left to look at.
        by_list=same_inputs and by_group is not None,
    )
    extra = dict(
        records=tuple(records),
        tombstones=tombstones,
        many_keys=many_keys,
        labels=labels,
        settings=(*settings, groups),
    )
    if not changed and earlier is not None:
        reused = earlier.at(now)
        if reused is not None:
            return Resolved(earlier.window, *reused, parts=parts, **extra)
    if _names_across_groups(records, parts):
        resolution, projection = resolve_context(records, tombstones, context, basis)
        return Resolved.made(records, now, resolution, projection)
    return _assembled(parts, now, extra)


def _grouping(
    n_records: int, groups: int | None, by_group: KeyGroups | None
) -> tuple[int, KeyGroups | None]:
    """How many groups `resolve_keyed` resolves in, and the held groups it takes (None
    when their number is not the one asked for)."""
    if by_group is not None and (groups is None or groups == by_group.count):
        return by_group.count, by_group
    return (groups_for(n_records) if groups is None else groups), None


def _names_across_groups(records: Sequence[MemoryRecord], parts: Mapping[int, KeyPart]) -> bool:
    """R5 across groups: whether a record names, in `supersedes`, a record of another group
    that is among `records`."""
    outside = [part.outside for part in parts.values() if part.outside]
    if not outside:
        return False
    ids = {record.id for record in records}
    return any(target in ids for named in outside for target in named)


class _GroupMaking:
    """What each group's share of a context is made with (`resolve_keyed`): the context, the
    tombstones (by group, and those that withhold here, F7.2, found once when a group is
    made), the registry, the secret and the thresholds (`basis`)."""

    def __init__(self, context, tombstones, basis: ResolveBasis, groups):
        self.context, self.tombstones = context, tombstones
        self.basis, self.groups = basis, groups
        self._by_group: dict[int, list[Tombstone]] | None = None
        self._withholding: frozenset[str] | None = None

    def parts(
        self,
        grouping: Mapping[int, list[MemoryRecord]],
        before: Mapping[int, KeyPart],
        *,
        held: bool,
        by_list: bool,
    ) -> tuple[dict[int, KeyPart], bool]:
        """Each group's share, in group order, and whether any was made again (or the
        groups are not those of `before`). `held`: `grouping` is the groups a state holds
        (`KeyGroups`), and each share notes the list it stands for; `by_list`: a group whose
        list is the one its share in `before` came from is reused while `now` stays in its
        window."""
        now = self.context.now
        parts: dict[int, KeyPart] = {}
        changed = len(grouping) != len(before)
        for index in sorted(grouping):
            grouped, part = grouping[index], before.get(index)
            if by_list and part is not None and part.source is grouped and part.within(now):
                parts[index] = part
                continue
            made = self.part(index, grouped, part)
            changed = changed or made is not part
            parts[index] = made.from_list(grouped) if held else made
        return parts, changed

    def part(self, index: int, grouped: list[MemoryRecord], before: KeyPart | None) -> KeyPart:
        """The group's share: `before` when it holds for these records, tombstones and
        registry entries at `now`, else made again."""
        tombs, withholding = self.tombstones_of(index), self.withholding()
        # F7.2: a group is withheld by tombstones of any key; what it holds of them is part
        # of what it was made with.
        many_keys, labels = self.basis.many_keys, self.basis.labels
        made_with = (
            tuple((k, k in many_keys, labels.get(k)) for k in sorted({r.key for r in grouped})),
            _withheld_in_group(grouped, withholding),
        )
        now = self.context.now
        if before is not None and before.holds(grouped, tombs, made_with, now):
            return before
        made = _resolve_group(grouped, tombs, self.context, self.basis, withholding)
        return KeyPart(tuple(grouped), tuple(tombs), made_with, stable_window(grouped, now), *made)

    def tombstones_of(self, index: int) -> list[Tombstone] | tuple:
        """The tombstones of the group's keys (R4)."""
        if self._by_group is None:
            self._by_group = {}
            for tomb in self.tombstones:
                self._by_group.setdefault(group_of(tomb.key, self.groups), []).append(tomb)
        return self._by_group.get(index, ())

    def withholding(self) -> frozenset[str]:
        """The tombstones, of any key, whose scope covers the context (F7.2)."""
        if self._withholding is None:
            self._withholding = withholding_in(self.tombstones, self.context)
        return self._withholding


def _same_order(held: tuple, given: Sequence) -> bool:
    return len(held) == len(given) and all(map(operator.is_, held, given))


def _withheld_in_group(grouped, withholding: frozenset[str]) -> frozenset[str]:
    """The tombstones of `withholding` that withhold records of the group (F7.2)."""
    if not withholding:
        return frozenset()
    return withholding.intersection(chain.from_iterable(r.withheld_by for r in grouped))


def _resolve_group(grouped, tombs, context, basis: ResolveBasis, withholding):
    resolution = basis.resolve(grouped, tombs, context)
    projection = basis.project(resolution.active, withholding)
    ids = {record.id for record in grouped}
    outside = frozenset(
        record.supersedes
        for record in grouped
        if record.supersedes is not None and record.supersedes not in ids
    )
    order = tuple(map(prompt_order, projection.prompt))
    return resolution, projection, outside, order


def _assembled(parts: dict[int, KeyPart], now: datetime, extra: dict) -> Resolved:
    """The context's resolution and projection from its groups', as `resolve` and `project`
    make them of all the records at once."""
    resolutions = [part.resolution for part in parts.values()]
    active = sorted(chain.from_iterable(r.active for r in resolutions), key=_active_order)
    trace: dict = {
        "candidates": sum(r.trace["candidates"] for r in resolutions),
        "active": len(active),
    }
    for reason in RESOLVER_REASONS:
        name = "excluded_" + reason.replace("-", "_")
        trace[name] = sum(r.trace[name] for r in resolutions)
    trace["resolver_version"] = RESOLVER_VERSION
    trace["now"] = rfc3339(now)
    resolution = Resolution(
        active=tuple(active),
        excluded=Exclusions.joined(r.excluded for r in resolutions),
        trace=trace,
        explanations=Explanations([r.explanations for r in resolutions]),
    )
    ordered = sorted(
        chain.from_iterable(
            zip(part.prompt_order, part.projection.prompt, strict=True) for part in parts.values()
        )
    )
    projection = Projection(
        prompt=tuple(map(_second, ordered)),
        excluded=Exclusions.joined(part.projection.excluded for part in parts.values()),
    )
    los = [part.window[0] for part in parts.values() if part.window[0] is not None]
    his = [part.window[1] for part in parts.values() if part.window[1] is not None]
    window = (max(los) if los else None, min(his) if his else None)
    return Resolved(window, resolution, projection, parts=parts, **extra)


_active_order = operator.attrgetter("key", "id")
_second = operator.itemgetter(1)
