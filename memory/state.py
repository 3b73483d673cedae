"""The one door into memory's state (docs/DESIGN.md, "Memory owns the turn's state"; SPEC §3
R1–R8, §4 W3–W10, E1). Whoever reads a context's memory — the turn, the resolve endpoint
(`memory.selectors.resolution`), the write services (`slots_state`) and the pages (every
scope of the user) — asks `ContextMemory` and reaches none of memory's tables, statements or
per-process copies itself. It does two things:

1. **The state of a context at a version** (`read`, or `read_parts` + `read_from` +
   `at_version` for the turn, whose one statement after the locks carries memory's parts):
   the user's memory version and its removal version and — unless the version is the one
   this process keeps the context's state at — the records, tombstones and retractions of
   the context's scopes: only those changed after the kept version (`changed_version`,
   `memory.triggers`) when no removal came after it, every one otherwise. The answer is the
   state as of the version read: the process's copy (`memory.storage.MEMORY_CACHE`) as it
   is, or caught up with the rows changed since (`memory.catch_up.caught_up`), or what was
   read whole; with the resolution this process made last, which the pure pass reuses group
   of keys by group of keys while it holds (`memory.current.resolve_keyed`). The same read
   goes through the ORM (`read_orm`) where the raw reader does not serve the database.
2. **Apply a batch of writes** (`apply_writes`): the rows of the pure pass's write plan join
   the caller's one write (`config.storage.RowWriter`, `memory.plan_rows`), and once they
   commit the state they left is kept, at the version read, for the process's next request:
   no version is read back, since the next read catches that state up with every row
   stamped after the version read, the writes' own rows included.

The process's copy is correct whatever else writes to the database: it is used as it is only
while the user's memory version (`memory.triggers`) is the one it was kept at, and caught up
only with rows the triggers stamped after that version; a removal after it has it read
whole. The turn's other reads of memory — the extractor's "it" (SPEC §8) and the key
registry — are parts of the same statement, built here once per process (`last_named_part`,
`registry_part`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connections, transaction

from config.storage import RawReader, RowWriter, json_rows, raw_reader

from . import storage
from .catch_up import caught_up
from .current import EMPTY, ContextState, Resolved
from .domain import MemoryRecord as DomainRecord
from .domain import Tombstone as DomainTombstone
from .models import KeyDefinition, MemoryProfile, MemoryRecord, MemoryVersion, SlotRetraction
from .plan_rows import add_plan_rows
from .selectors.records import (
    Registry,
    catalog_registry,
    last_named_key_query,
    memory_version_of,
    records_to_domain,
    registry,
    tombstones_of,
)
from .storage import MEMORY_CACHE, CachedMemory
from .write_rules import WritePlan


@dataclass(frozen=True)
class MemoryState:
    """A context's state at the user's memory `version` (None before any memory write), with
    the resolution this process made of it earlier, if any."""

    version: int | None
    state: ContextState
    resolved: Resolved | None = None


EVERY_SCOPE = ("*",)  # the cache's name for the state of every scope of a user (no scope id)


class ContextMemory:
    """The memory of one context (the scope ids it sees, R1) for one request: asked by the
    turn's statement, answered at the version read, written with the turn's rows. The one
    door into memory's state: the turn, the resolve endpoint, the write services
    (`slots_state`) and the pages (`scope_ids` None: every scope of the user) read through it.
    """

    def __init__(
        self, user, scope_ids: Sequence[str] | None, *, profile: MemoryProfile | None = None
    ):
        self.user = user
        self.scope_ids = None if scope_ids is None else list(scope_ids)
        self._cache_key = EVERY_SCOPE if scope_ids is None else self.scope_ids
        if profile is None:
            try:
                profile = user.memory_profile
            except MemoryProfile.DoesNotExist:  # a user made outside `user_put`: no secret yet
                profile = None
        self.secret = profile.secret if profile is not None else ""
        cached = MEMORY_CACHE.get(user.pk, self._cache_key)
        self._cached = cached
        self._read = False
        self._version: int | None = None
        self._known: int | None = None
        self._found: ContextState | None = None
        self._state = MemoryState(None, EMPTY)

    @property
    def secret_bytes(self) -> bytes:
        """The user's secret as the pure core takes it (empty before the user has one)."""
        return bytes.fromhex(self.secret) if self.secret else b""

    def read(self) -> tuple[MemoryState, Registry]:
        """The door's read, for a caller whose statement carries nothing else (the write
        services, the resolve endpoint, the pages): the state at the version read
        (`at_version`) and the key registry. One statement through the raw reader — the
        registry in it unless this process holds it at the catalog's version — and the ORM's
        reads (`read_orm`) where the raw reader does not serve the database."""
        reader = raw_reader(MemoryRecord.objects.db)
        if reader is None:
            self.read_orm()
            keyed = registry()
            return self.at_version(keyed), keyed
        parts, params = self.read_parts(reader)
        cold = not catalog_registry.warm()
        if cold:
            parts.append(registry_part(reader))
        values = storage.read_parts(reader, parts, params)
        self.read_from(values)
        if cold:
            keyed = catalog_registry.put(Registry(json.loads(values[0])))
        else:
            keyed = catalog_registry()
        return self.at_version(keyed), keyed

    def read_parts(self, reader: RawReader) -> tuple[list[str], list]:
        """The state's parts as scalar subqueries of the caller's one statement, with their
        parameters; `read_from` takes their values."""
        cached = self._cached
        known = cached.version if cached is not None and cached.secret == self.secret else None
        self._known = known
        return storage.context_state_parts(reader, self.user, self.scope_ids, known, catch_up=True)

    def read_from(self, values: list) -> None:
        """Take the values of `read_parts` off the front of `values`: the state held caught up
        with the rows changed after its version, unless a removal came after it (then what
        was read is the whole state)."""
        version, removed, records, tombstones, retractions = (values.pop(0) for _ in range(5))
        self._read, self._version = True, version
        if records is None:
            return
        found = storage.parse_context_state(records, tombstones, retractions, self.user.username)
        known = self._known
        if known is not None and removed is not None and removed <= known:
            found = caught_up(self._cached.state, found)
            MEMORY_CACHE.note_catch_up()
        self._found = found

    def read_orm(self) -> None:
        """What `read_parts` reads, through the ORM: the reference the statement is tested
        against, and the read wherever the raw reader does not serve the database."""
        user = self.user
        records = MemoryRecord.objects.filter(user=user)
        retractions = SlotRetraction.objects.filter(user=user)
        if self.scope_ids is not None:
            records = records.filter(scope_id__in=self.scope_ids)
            retractions = retractions.filter(scope_id__in=self.scope_ids)
        latest: dict[tuple[str, str, str], datetime] = {}
        for scope_id, key, hashed, at in retractions.values_list(
            "scope_id", "key", "value_hash", "retracted_at"
        ):
            slot = (scope_id, key, hashed or "")
            if slot not in latest or at > latest[slot]:
                latest[slot] = at
        self._found = ContextState(
            records_to_domain(records, user.username), tombstones_of(user), latest
        )
        self._read, self._version = True, memory_version_of(user.pk)

    def at_version(self, registry) -> MemoryState:
        """The state of the context at the version read: the process's copy when the version
        is the one it was kept at, else what was read (nothing read: the empty state, I8)."""
        if not self._read:
            return self._state
        state = self._found
        if state is None:  # the user's memory is as this process last saw it
            state = self._cached.state
            MEMORY_CACHE.note_reuse()
        cached = self._cached
        resolved = cached.resolved_by_key(self.secret) if cached else None
        self._state = MemoryState(self._version, state, resolved)
        return self._state

    def apply_writes(
        self,
        writer: RowWriter,
        writes: WritePlan,
        *,
        scope_fields: dict,
        records: list[DomainRecord],
        resolved: Resolved,
        registry,
        by_slot=None,
        by_group=None,
    ) -> None:
        """A batch's rows (W3–W10, as `memory.plan_rows.add_plan_rows` lays them out) added to
        `writer`; once written, the context's state as they left it — `records` with their
        resolution (`memory.current.resolve_keyed`) — is kept for the next request of this
        process, at the version read, once the transaction commits (`_keep`). `by_slot`:
        `records` by scoped key as the writes left them (`memory.write_rules.WriteBatch.slots`) and
        `by_group` by group of keys (`memory.current.KeyGroups`), kept with the state. A
        transaction that rolls back keeps nothing."""
        add_plan_rows(writer, self.user, writes, scope_fields)
        if self._read:
            writer.then(
                lambda: self._keep(writes, records, resolved, registry, (by_slot, by_group))
            )

    def keep(self, resolved: Resolved | None, registry) -> None:
        """A read's end (the resolve endpoint, `memory.selectors.resolution`; the write
        services, `slots_state`, with no resolution): the state read, with the resolution made
        of it, kept at the version read for the process's next request."""
        read = self._state
        if read.version is not None:
            self._put(read.version, read.state, resolved, registry)

    def _keep(self, writes: WritePlan, records, resolved: Resolved, registry, held) -> None:
        read = self._state
        if writes.releases or read.version is None:
            # F7.2: the database decided which links the new evidence released; the next
            # request catches the records up (their links' triggers stamped them). A first
            # write has no version read to keep a state at.
            return
        if not writes.changes_memory:
            self._put(read.version, read.state, resolved, registry)
            return
        retractions = dict(read.state.retractions)
        for scope_id, key, hashed, at in writes.retractions:
            retractions[(scope_id, key, hashed)] = at
        tombstones = read.state.tombstones
        by_slot, by_group = held
        if by_slot is None:
            state = ContextState(records, tombstones, retractions)
        else:
            state = ContextState.with_slots(records, tombstones, retractions, by_slot, by_group)
        # What the writes left is kept at the version read, and only once they commit: the
        # user's version has moved past it by then, so the next read catches this state up
        # with every row stamped after it — these writes' own rows too, which replace
        # themselves (`memory.catch_up.caught_up`) — and no version is read back. A
        # transaction that rolls back keeps nothing, so no process holds a row that never
        # was.
        transaction.on_commit(
            lambda: self._put(read.version, state, resolved, registry),
            using=MemoryRecord.objects.db,
        )

    def _put(self, version: int, state: ContextState, resolved: Resolved | None, registry):
        if resolved is None:
            # A read that resolved nothing (a write's, `slots_state`) keeps the resolution
            # held before: `memory.current.resolve_keyed` reuses each group of it that holds.
            cached = self._cached
            held = cached.resolved if cached is not None and cached.secret == self.secret else None
        else:
            held = (registry, resolved)
        MEMORY_CACHE.put(
            self.user.pk, self._cache_key, CachedMemory(version, state, self.secret, resolved=held)
        )


@dataclass(frozen=True)
class SlotsState:
    """What a batch of writes decides against (W3–W10, `memory.write_rules.Known`): the stored
    records of each scoped key asked for, in version order (forgotten skeletons and sources
    included), the tombstones and the latest retraction per slot of their keys, and which of
    the keys are `many`."""

    records: Mapping[tuple[str, str], Sequence[DomainRecord]]
    tombstones: list[DomainTombstone]
    retractions: dict[tuple[str, str, str], datetime]
    many_keys: frozenset[str]


def slots_state(
    user,
    slots: Iterable[tuple[str, str]],
    *,
    profile: MemoryProfile | None = None,
    scope_ids: Sequence[str] | None = None,
) -> SlotsState:
    """The state of the scoped keys `slots` ((scope_id, key) pairs) of `user`, read under the
    caller's lock through the one door into memory: the state of the scopes they live in
    (`ContextMemory.read`; `scope_ids`, a context's, when the caller names them) at the
    version read — this process's copy while it holds, caught up with the rows changed since,
    or read whole — and kept for the next write or read of those scopes. `profile`: the
    memory profile the caller's lock took (its secret)."""
    slots = sorted(set(slots))
    if not slots:
        return SlotsState({}, [], {}, frozenset())
    if scope_ids is None:
        scope_ids = sorted({scope_id for scope_id, _ in slots})
    memory = ContextMemory(user, scope_ids, profile=profile)
    held, keyed = memory.read()
    memory.keep(None, keyed)
    state = held.state
    by_slot = state.by_slot
    keys = {key for _, key in slots}
    return SlotsState(
        {slot: by_slot.get(slot, ()) for slot in slots},
        [t for t in state.tombstones if t.key in keys],
        {slot: at for slot, at in state.retractions.items() if slot[1] in keys},
        frozenset(key for key in keys if keyed.is_many(key)),
    )


def last_named_part(reader: RawReader, user_id) -> tuple[str, list]:
    """SPEC §8's "it" (`memory.selectors.last_named_key_query`) as a subquery and its
    parameters, compiled once per process and database."""
    sql, params, at = reader.sql("last-named", _last_named_sql)
    params = list(params)
    params[at] = user_id
    return f"({sql})", params


_NOBODY = -7_340_033  # a user id no row has, marking where the user's id goes


def _last_named_sql(reader: RawReader) -> tuple[str, tuple, int]:
    query = last_named_key_query(_NOBODY).query
    sql, params = query.get_compiler(using=reader.alias).as_sql()
    return sql, tuple(params), list(params).index(_NOBODY)


def registry_part(reader: RawReader) -> str:
    """The whole key registry as one JSON array of (key, cardinality, label, pinned)."""
    return reader.sql(
        "registry-part",
        lambda r: json_rows(
            _vendor(r),
            [
                r.column(KeyDefinition, field, "k.")
                for field in ("key", "cardinality", "label", "pinned")
            ],
            f"FROM {r.table(KeyDefinition)} k",
        ),
    )


def _vendor(reader: RawReader) -> str:
    return connections[reader.alias].vendor


def on_forget(hook) -> None:
    """`hook(user_id)` is called when this process learns of a forget or an undo of the user
    (F7.6): a turn's holders of the user's text let it go (`memory.storage.MemoryCache`)."""
    MEMORY_CACHE.on_forget(hook)


def profile_table() -> str:
    """The memory profile's table: a reply's statement takes the memory write lock's row
    (W8) in share mode."""
    return MemoryProfile._meta.db_table


def version_table() -> str:
    """The users' memory versions' table (`memory.triggers`): a reply's statement reads its
    user's row as its snapshot saw it and as it is once the memory write lock is taken, to
    know whether a forget committed in between (F7.1)."""
    return MemoryVersion._meta.db_table
