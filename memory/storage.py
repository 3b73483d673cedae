"""Memory's statements for the speed devices of `config.storage` (docs/DESIGN.md, habit 2):
the record read (records with their source ids in one statement), a context's state as
the door reads it (`memory.state`) (whole, or only what changed since a held version), and the
per-process cache of those states (`MEMORY_CACHE`); a user's tombstones with the secret, and
the key registry. Each builds exactly the domain objects the ORM path in `memory.selectors`
builds; tests/memory/test_selectors.py compares the two."""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat

from django.conf import settings
from django.db import connections

from config.builders import build_slotted
from config.storage import RawReader, json_rows, parse_datetimes
from conversations.scopes import scope_of_id

from .current import ContextState, Resolved
from .domain import MemoryRecord as DomainRecord
from .domain import Tombstone as DomainTombstone
from .models import (
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    MemoryVersion,
    MemoryWithholding,
    SlotRetraction,
    Tombstone,
)

RECORD_FIELDS = (
    "id",
    "key",
    "value",
    "scope_kind",
    "scope_id",
    "scene",
    "status",
    "status_since",
    "authority",
    "confidence",
    "valid_from",
    "valid_until",
    "recorded_at",
    "evidence_time",
    "supersedes_id",
    "retracted_at",
    "version",
    "told_by_connection",
    "told_by_name",
)


# The columns of a tombstone row, in the order every reader reads them.
TOMBSTONE_COLUMNS = ("id", "scope_id", "key", "value_hash", "forgotten_at", "blocks_sources_before")


def tombstone_from_row(row, username: str) -> DomainTombstone:
    """A tombstone row (`TOMBSTONE_COLUMNS`, times as datetimes) as the domain's: the one
    mapping every reader of tombstones uses (F3)."""
    id_, scope_id, key, value_hash, forgotten_at, blocks_before = row
    return DomainTombstone(
        id=str(id_),
        user=username,
        scope_id=scope_id,
        key=key,
        value_hash=value_hash,
        forgotten_at=forgotten_at,
        blocks_sources_before=blocks_before,
    )


def tombstones_from_rows(rows, username: str, *, parsed: bool = True) -> list[DomainTombstone]:
    """Tombstone rows (`TOMBSTONE_COLUMNS`) as the domain's; `parsed=False`: their times are a
    raw statement's text, parsed in bulk."""
    rows = list(rows)
    forgotten, blocks = [r[4] for r in rows], [r[5] for r in rows]
    if not parsed:
        forgotten, blocks = parse_datetimes(forgotten), parse_datetimes(blocks)
    return [
        tombstone_from_row((*row[:4], at, before), username)
        for row, at, before in zip(rows, forgotten, blocks, strict=True)
    ]


def record_sql(reader: RawReader) -> dict[str, str]:
    """RECORD_FIELDS of the records matching `{where}` in the model's order, each with its
    source message ids in one more column (an array on PostgreSQL, comma-joined text on
    SQLite; ids hold no comma): the records and their sources in one statement."""
    table = reader.table(MemoryRecord)
    select = ", ".join(reader.column(MemoryRecord, name) for name in RECORD_FIELDS)
    record_id = reader.name(MemoryRecord, "id", table + ".")
    vendor = connections[reader.alias].vendor
    sources = linked_ids(reader, vendor, MemorySource, "message", record_id)
    withheld = linked_ids(reader, vendor, MemoryWithholding, "tombstone", record_id)
    return {
        "records": f"SELECT {select}, {sources}, {withheld} FROM {table} WHERE {{where}} "
        f"ORDER BY {reader.order(MemoryRecord)}",
    }


def linked_ids(reader: RawReader, vendor: str, model, field: str, record_id: str) -> str:
    """A scalar subquery: the ids `field` of the `model` rows naming the record `record_id`
    (its source messages, or the tombstones withholding it, F7.2) — an array on PostgreSQL,
    comma-joined text on SQLite (ids hold no comma), NULL or empty when there is none."""
    found = reader.column(model, field, "l.")
    linked = (
        f"FROM {reader.table(model)} l WHERE {reader.name(model, 'memory', 'l.')} = {record_id}"
    )
    if vendor == "postgresql":
        return f"ARRAY(SELECT {found} {linked})"
    return f"(SELECT group_concat({found}, ',') {linked})"


def split_linked(linked) -> list:
    """A column of `linked_ids`, each row a list of ids or None."""
    if linked and any(isinstance(found, str) for found in linked):
        return [found.split(",") if found else None for found in linked]
    return list(linked)


def read_records(reader: RawReader, where: str, params: list, username: str) -> list[DomainRecord]:
    """The records matching `where` (SQL over the record table), sources included, in the
    model's order: one query."""
    sql = reader.sql("records", record_sql)
    rows = reader.fetch(sql["records"].format(where=where), params)
    if not rows:
        return []
    columns = list(zip(*rows, strict=True))
    withheld, linked = split_linked(columns.pop()), split_linked(columns.pop())
    for index in DATETIME_COLUMNS:
        columns[index] = parse_datetimes(columns[index])
    return build_records(columns, linked, username, withheld)


DATETIME_COLUMNS = tuple(
    RECORD_FIELDS.index(name)
    for name in (
        "status_since",
        "valid_from",
        "valid_until",
        "recorded_at",
        "evidence_time",
        "retracted_at",
    )
)


# RECORD_FIELDS column → MemoryRecord (domain) field, for the columns stored as they are.
_COLUMN_FIELDS = {
    "id": "id",
    "key": "key",
    "value": "value",
    "status": "status",
    "status_since": "status_since",
    "authority": "authority",
    "confidence": "confidence",
    "valid_from": "valid_from",
    "valid_until": "valid_until",
    "recorded_at": "recorded_at",
    "evidence_time": "evidence_time",
    "supersedes_id": "supersedes",
    "retracted_at": "retracted_at",
    "version": "version",
}


def build_records(
    columns: list, found_sources: list, username: str, found_withheld=None
) -> list[DomainRecord]:
    """Domain records from columns in RECORD_FIELDS order (values already converted) and,
    per row, the list of its source message ids or None, and the list of the ids of the
    tombstones withholding it or None (F7.2; None for every row: none). Records of one scope
    share one `Scope` object."""
    n = len(columns[0])
    index = RECORD_FIELDS.index
    scope_ids = columns[index("scope_id")]
    scopes = {scope_id: scope_of_id(scope_id) for scope_id in set(scope_ids)}
    empty: tuple = ()
    values = {field: columns[index(column)] for column, field in _COLUMN_FIELDS.items()}
    values["user"] = repeat(username, n)
    values["scope"] = list(map(scopes.__getitem__, scope_ids))
    values["sources"] = [tuple(sorted(found)) if found else empty for found in found_sources]
    told = zip(columns[index("told_by_connection")], columns[index("told_by_name")], strict=True)
    values["told_by"] = [(found, name) if found else empty for found, name in told]
    values["withheld_by"] = (
        repeat(empty, n)
        if found_withheld is None
        else [tuple(sorted(found)) if found else empty for found in found_withheld]
    )
    return build_slotted(DomainRecord, values, n)


def context_state_parts(
    reader: RawReader,
    user,
    scope_ids: list[str] | None,
    cached_version: int | None = None,
    *,
    catch_up: bool = False,
) -> tuple[list[str], list]:
    """SQL for the parts of a `ContextState` as scalar subqueries, and their parameters: the
    user's memory version, then the records, the tombstones and the retractions, each a JSON
    array — or NULL when the version is `cached_version` (the caller holds that state).
    `scope_ids` None: every scope of the user (the pages).

    With `catch_up`, the user's removal version comes second and, when the caller holds the
    state at `cached_version` and no removal came after it, the arrays hold only the rows
    changed after it (`memory.catch_up.caught_up`); otherwise every row."""
    vendor = connections[reader.alias].vendor
    column, name = reader.column, reader.name
    if scope_ids is None:
        in_scopes, scope_ids = "", []
    else:
        in_scopes = f"IN ({', '.join(['%s'] * len(scope_ids))})"
    since, since_params = "", []
    if catch_up and cached_version is not None:
        # A removal after the held version: every row (no row is stamped below 0).
        since = (
            f"(CASE WHEN (SELECT {name(MemoryVersion, 'removed_version')} "
            f"FROM {reader.table(MemoryVersion)} WHERE {name(MemoryVersion, 'user_id')} = %s) "
            f"<= %s THEN %s ELSE -1 END)"
        )
        since_params = [user.pk, cached_version, cached_version]

    def changed(model, alias: str) -> str:
        return f" AND {name(model, 'changed_version', alias)} > {since}" if since else ""

    record_id = name(MemoryRecord, "id", "r.")
    sources = linked_ids(reader, vendor, MemorySource, "message", record_id)
    withheld = linked_ids(reader, vendor, MemoryWithholding, "tombstone", record_id)
    records = json_rows(
        vendor,
        [column(MemoryRecord, field, "r.") for field in RECORD_FIELDS] + [sources, withheld],
        f"FROM {reader.table(MemoryRecord)} r WHERE {name(MemoryRecord, 'user', 'r.')} = %s"
        + (f" AND {name(MemoryRecord, 'scope_id', 'r.')} {in_scopes}" if in_scopes else "")
        + changed(MemoryRecord, "r."),
    )
    tombstones = json_rows(
        vendor,
        [
            column(Tombstone, field, "t.")
            for field in (
                "id",
                "scope_id",
                "key",
                "value_hash",
                "forgotten_at",
                "blocks_sources_before",
            )
        ],
        f"FROM {reader.table(Tombstone)} t WHERE {name(Tombstone, 'user', 't.')} = %s"
        + changed(Tombstone, "t."),
    )
    retractions = json_rows(
        vendor,
        [
            column(SlotRetraction, field, "x.")
            for field in ("scope_id", "key", "value_hash", "retracted_at")
        ],
        f"FROM {reader.table(SlotRetraction)} x WHERE {name(SlotRetraction, 'user', 'x.')} = %s"
        + (f" AND {name(SlotRetraction, 'scope_id', 'x.')} {in_scopes}" if in_scopes else "")
        + changed(SlotRetraction, "x."),
    )
    version = (
        f"(SELECT {name(MemoryVersion, 'version')} FROM {reader.table(MemoryVersion)} "
        f"WHERE {name(MemoryVersion, 'user_id')} = %s)"
    )
    parts, params = [version], [user.pk]
    if catch_up:
        parts.append(
            f"(SELECT {name(MemoryVersion, 'removed_version')} FROM {reader.table(MemoryVersion)} "
            f"WHERE {name(MemoryVersion, 'user_id')} = %s)"
        )
        params.append(user.pk)
    for part, found in (
        (records, [user.pk, *scope_ids, *since_params]),
        (tombstones, [user.pk, *since_params]),
        (retractions, [user.pk, *scope_ids, *since_params]),
    ):
        if cached_version is None:
            parts.append(part)
            params += found
        else:
            parts.append(f"CASE WHEN {version} = %s THEN NULL ELSE {part} END")
            params += [user.pk, cached_version, *found]
    return parts, params


def parse_context_state(
    records: str, tombstones: str, retractions: str, username: str
) -> ContextState:
    """The three JSON parts read by `context_state_parts`, as domain objects equal to what the
    record read builds."""
    rows = json.loads(records)
    built: list[DomainRecord] = []
    if rows:
        columns = list(zip(*rows, strict=True))
        withheld, linked = split_linked(columns.pop()), split_linked(columns.pop())
        for index in DATETIME_COLUMNS:
            columns[index] = parse_datetimes(columns[index])
        built = build_records(columns, linked, username, withheld)
    tombs = tombstones_from_rows(json.loads(tombstones), username, parsed=False)
    found = json.loads(retractions)
    latest: dict[tuple[str, str, str], datetime] = {}
    for row, at in zip(found, parse_datetimes([row[3] for row in found]), strict=True):
        slot = (row[0], row[1], row[2] or "")
        if slot not in latest or at > latest[slot]:
            latest[slot] = at
    return ContextState(built, tombs, latest)


# ---------------------------------------------------------------------------------------------
# A user's tombstones with the secret, and the key registry


def _registry_tombstone_sql(reader: RawReader) -> dict[str, str]:
    """A user's tombstones (`{where}` over the alias `t`) with the user's secret, in the
    model's order; and the key registry."""
    column = reader.column
    tomb = ", ".join(
        column(Tombstone, name, "t.")
        for name in ("id", "scope_id", "key", "value_hash", "forgotten_at", "blocks_sources_before")
    )
    keys = ", ".join(
        column(KeyDefinition, name) for name in ("key", "cardinality", "label", "pinned")
    )
    return {
        "tombstones": (
            f"SELECT {tomb}, {column(MemoryProfile, 'secret', 'p.')} "
            f"FROM {reader.table(Tombstone)} t "
            f"LEFT JOIN {reader.table(MemoryProfile)} p "
            f"ON {reader.name(MemoryProfile, 'user', 'p.')} = "
            f"{reader.name(Tombstone, 'user', 't.')} "
            f"WHERE {{where}} ORDER BY {reader.order(Tombstone, 't.')}"
        ),
        "registry": f"SELECT {keys} FROM {reader.table(KeyDefinition)} "
        f"ORDER BY {reader.order(KeyDefinition)}",
    }


def read_tombstones_and_secret(
    reader: RawReader, user, keys
) -> tuple[list[DomainTombstone], bytes]:
    """`user`'s tombstones (of `keys`, or all) in the model's order, with the user's secret
    when one of them holds a value hash: one statement."""
    where, params = f"{reader.name(Tombstone, 'user', 't.')} = %s", [user.pk]
    if keys is not None:
        keys = list(keys)
        if not keys:
            where, params = "1 = 0", []
        else:
            where += (
                f" AND {reader.name(Tombstone, 'key', 't.')} IN ({', '.join(['%s'] * len(keys))})"
            )
            params += keys
    sql = reader.sql("registry-tombstones", _registry_tombstone_sql)
    rows = reader.fetch(sql["tombstones"].format(where=where), params)
    username = user.username
    tombstones = tombstones_from_rows(rows, username, parsed=False)
    secret = b""
    if any(t.value_hash for t in tombstones):
        hexed = rows[0][6]
        secret = bytes.fromhex(hexed) if hexed else b""
    return tombstones, secret


def read_registry(reader: RawReader) -> list[tuple]:
    """The whole key registry as (key, cardinality, label, pinned) rows: one statement."""
    return reader.fetch(reader.sql("registry-tombstones", _registry_tombstone_sql)["registry"], [])


# ---------------------------------------------------------------------------------------------
# A context's whole memory state as parts of one statement (the turn read, turns.storage)


# ---------------------------------------------------------------------------------------------
# The per-process memory cache: what a read of a context's state found at a memory version


@dataclass
class CachedMemory:
    """A context's state as read (or as a write left it) at `version`, with — once a resolve
    made them — the resolution and projection valid over a window of time, under the registry
    they were made with (compared by identity: the catalog cache's object)."""

    version: int
    state: ContextState
    secret: str
    resolved: tuple | None = None  # (registry, memory.current.Resolved)

    @functools.cached_property
    def forgets(self) -> frozenset[str]:
        """The ids of the user's tombstones this state holds: another set in a newer state
        of the same user says a forget or an undo came between them (F7.6)."""
        return frozenset(t.id for t in self.state.tombstones)

    def state_at(self, version: int | None, secret: str) -> ContextState | None:
        """This entry's state when the user's memory version is still `version` (and the
        secret the same), else None: the state must be read."""
        return self.state if version == self.version and secret == self.secret else None

    def resolved_by_key(self, secret: str) -> Resolved | None:
        """The resolution this process made last for this context, whatever state and
        registry it was made of: `memory.current.resolve_keyed` reuses each key of it that
        still holds."""
        if self.resolved is None or secret != self.secret:
            return None
        return self.resolved[1]


class MemoryCache:
    """A bounded, thread-safe LRU of `CachedMemory` by (user id, scope ids). Entries are never
    changed once stored: a new state replaces the entry. Correct whatever else the database
    sees: an entry is used as it is only while the user's memory version (`memory.triggers`)
    is the one it was stored with, else caught up with the rows stamped after it
    (`memory.state`).

    F7.6, no process keeps a purged value: a state stored with another set of the user's
    tombstones than an entry already held (a forget or an undo came between them — every one
    changes the user's memory version, so the request that stores it has read it) drops the
    user's other entries, whose records may still hold what the forget erased, and tells the
    process's other holders of the user's text (`on_forget`); a forget or an undo made in this
    process does both once it commits (`forgotten`)."""

    def __init__(self, size: int):
        self.size = size
        self._entries: OrderedDict[tuple, CachedMemory] = OrderedDict()
        self._users: dict[object, set[tuple]] = {}  # the keys of each user's entries
        self._lock = threading.Lock()
        self._hooks: list[Callable[[object], None]] = []
        self.reused = 0  # states reused instead of read (tests and the benchmark read it)
        self.caught_up = 0  # states caught up with what changed instead of read whole

    def note_reuse(self) -> None:
        with self._lock:
            self.reused += 1

    def note_catch_up(self) -> None:
        with self._lock:
            self.caught_up += 1

    def get(self, user_id, scope_ids) -> CachedMemory | None:
        key = (user_id, tuple(scope_ids))
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, user_id, scope_ids, entry: CachedMemory) -> None:
        key = (user_id, tuple(scope_ids))
        with self._lock:
            stale = [
                held
                for held in self._users.get(user_id, ())
                if self._entries[held].forgets != entry.forgets
            ]
            for held in stale:
                self._remove(held)
            held = self._entries.get(key)
            # The same state resolved whole keeps its resolution by groups (memory.current).
            if not (held and held.state is entry.state and _grouped(held) > _grouped(entry)):
                self._entries[key] = entry
                self._users.setdefault(user_id, set()).add(key)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._remove(next(iter(self._entries)))
        if stale:
            self._tell(user_id)

    def on_forget(self, hook: Callable[[object], None]) -> None:
        """`hook(user_id)` is called when this process learns of a forget or an undo of the
        user: the holders of the user's text drop it (F7.6)."""
        self._hooks.append(hook)

    def forgotten(self, user_id) -> None:
        """A forget or an undo of `user_id` committed in this process: every entry of the user
        is dropped and the other holders are told (F7.6)."""
        with self._lock:
            for held in list(self._users.get(user_id, ())):
                self._remove(held)
        self._tell(user_id)

    def _tell(self, user_id) -> None:
        for hook in self._hooks:
            hook(user_id)

    def _remove(self, key: tuple) -> None:
        """Drop an entry (the lock held)."""
        self._entries.pop(key, None)
        keys = self._users.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._users[key[0]]

    def entries(self) -> list[CachedMemory]:
        """The entries held now (what a test walks for a value a forget erased)."""
        with self._lock:
            return list(self._entries.values())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._users.clear()


def _grouped(entry: CachedMemory) -> bool:
    return bool(entry.resolved and entry.resolved[1].parts)


MEMORY_CACHE = MemoryCache(getattr(settings, "COMPANION", {}).get("MEMORY_CACHE_SIZE", 512))


def read_parts(reader: RawReader, parts: list[str], params: list) -> list:
    """The one row of a statement whose columns are `parts`, scalar subqueries such as a
    context's memory state (`memory.state.ContextMemory.read_parts`)."""
    [row] = reader.fetch("SELECT " + ", ".join(parts), params)
    return list(row)
