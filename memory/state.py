"""Memory owns the state of a context (docs/DESIGN.md, "Memory owns the turn's state"; SPEC
§3 R1–R8, §4 W3–W10, E1). A turn asks memory for two things and reaches none of its tables,
statements or per-process copies itself:

1. **The state of a context at a version** (`ContextMemory`, `at_version`) — for the turn and
   for the resolve endpoint alike (`memory.selectors.resolution`, which ends its read with
   `keep`). The turn's one statement after the locks carries memory's parts (`read_parts`):
   the user's memory version and its removal version and — unless the version is the one
   this process keeps the context's state at — the records, tombstones and retractions of
   the context's scopes: only those changed after the kept version (`changed_version`,
   `memory.triggers`) when no removal came after it, every one otherwise. `at_version`
   answers the state as of the version read: the process's copy
   (`memory.storage.MEMORY_CACHE`) as it is, or caught up with the rows changed since
   (`memory.catch_up.caught_up`), or what was read whole; with the resolution this process
   made last, which the pure pass reuses group of keys by group of keys while it holds
   (`memory.current.resolve_keyed`).
2. **Apply a batch of writes** (`apply_writes`): the rows of the pure pass's write plan join
   the turn's one write (`config.storage.RowWriter`), and once they commit the state they
   left is kept, at the version read, for the process's next request: no version is read
   back, since the next read catches that state up with every row stamped after the version
   read, the writes' own rows included.

The process's copy is correct whatever else writes to the database: it is used as it is only
while the user's memory version (`memory.triggers`) is the one it was kept at, and caught up
only with rows the triggers stamped after that version; a removal after it has it read
whole. The turn's other reads of memory — the extractor's "it" (SPEC §8) and the key
registry — are parts of the same statement, built here once per process (`last_named_part`,
`registry_part`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connections, transaction

from config.storage import RawReader, RowWriter, json_rows

from . import storage
from .catch_up import caught_up
from .current import EMPTY, ContextState, Resolved
from .domain import MemoryRecord as DomainRecord
from .models import KeyDefinition, MemoryProfile, MemoryRecord, MemoryVersion, SlotRetraction
from .selectors.records import (
    last_named_key_query,
    memory_version_of,
    records_to_domain,
    tombstones_of,
)
from .services.asserting import add_plan_rows
from .storage import MEMORY_CACHE, CachedMemory
from .write_rules import WritePlan


@dataclass(frozen=True)
class MemoryState:
    """A context's state at the user's memory `version` (None before any memory write), with
    the resolution this process made of it earlier, if any."""

    version: int | None
    state: ContextState
    resolved: Resolved | None = None


class ContextMemory:
    """The memory of one context (the scope ids it sees, R1) for one request: asked by the
    turn's statement, answered at the version read, written with the turn's rows."""

    def __init__(self, user, scope_ids: Sequence[str]):
        self.user = user
        self.scope_ids = list(scope_ids)
        try:
            self.secret = user.memory_profile.secret
        except MemoryProfile.DoesNotExist:  # a user made outside `user_put`: no secret yet
            self.secret = ""
        cached = MEMORY_CACHE.get(user.pk, self.scope_ids)
        self._cached = cached
        self._read = False
        self._version: int | None = None
        self._known: int | None = None
        self._found: ContextState | None = None
        self._state = MemoryState(None, EMPTY)

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
        records = records_to_domain(
            MemoryRecord.objects.filter(user=user, scope_id__in=self.scope_ids), user.username
        )
        latest: dict[tuple[str, str, str], datetime] = {}
        for scope_id, key, hashed, at in SlotRetraction.objects.filter(
            user=user, scope_id__in=self.scope_ids
        ).values_list("scope_id", "key", "value_hash", "retracted_at"):
            slot = (scope_id, key, hashed or "")
            if slot not in latest or at > latest[slot]:
                latest[slot] = at
        self._found = ContextState(records, tombstones_of(user), latest)
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
        """A batch's rows (W3–W10, as `memory.services.add_plan_rows` lays them out) added to
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

    def keep(self, resolved: Resolved, registry) -> None:
        """A read's end (the resolve endpoint, `memory.selectors.resolution`): the state read,
        with the resolution made of it, kept at the version read for the process's next
        request."""
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

    def _put(self, version: int, state: ContextState, resolved: Resolved, registry) -> None:
        MEMORY_CACHE.put(
            self.user.pk,
            self.scope_ids,
            CachedMemory(version, state, self.secret, resolved=(registry, resolved)),
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
