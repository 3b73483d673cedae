"""Reads of memory state. Every query filters by user first (SPEC §0). The resolver's
candidate read is one query for records with their sources and one for tombstones,
whatever the number of records (DESIGN: constant query counts)."""

from __future__ import annotations

import dataclasses
import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from itertools import repeat

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connections

from config import catalog, metrics
from config.errors import NotFound, ValidationError

from .builders import build_slotted, gc_paused
from .domain import MemoryRecord as DomainRecord
from .domain import Resolution, Scope, default_label
from .domain import Tombstone as DomainTombstone
from .models import KeyDefinition, MemoryProfile, MemoryRecord, MemorySource, Tombstone

RECORD_FIELDS = (
    "id", "key", "value", "scope_kind", "scope_id", "scene", "status", "status_since",
    "authority", "confidence", "valid_from", "valid_until", "recorded_at", "evidence_time",
    "supersedes_id", "retracted_at", "version",
)


def scope_from_id(kind: str, scope_id: str, scene: str | None = None) -> Scope:
    """Rebuild a Scope from its stable id (SPEC §1) without joining characters or
    conversations: user refs, slugs and UUIDs never contain a colon."""
    if kind == "user":
        return Scope("user")
    if kind == "character":
        return Scope("character", character=scope_id.rsplit(":", 1)[1])
    if kind == "conversation":
        return Scope("conversation", conversation=scope_id.split(":", 1)[1])
    _, conversation, scene_id = scope_id.split(":", 2)
    return Scope("scene", conversation=conversation, scene=scene if scene is not None else scene_id)


def _to_domain(row: tuple, username: str, sources: dict) -> DomainRecord:
    (id_, key, value, kind, scope_id, scene, status, status_since, authority, confidence,
     valid_from, valid_until, recorded_at, evidence_time, supersedes, retracted_at, version) = row
    rid = str(id_)
    return DomainRecord(
        id=rid, user=username, key=key, value=value, scope=scope_from_id(kind, scope_id, scene),
        authority=authority, valid_from=valid_from, recorded_at=recorded_at,
        evidence_time=evidence_time, version=version, status=status, status_since=status_since,
        confidence=confidence, valid_until=valid_until,
        supersedes=str(supersedes) if supersedes else None, retracted_at=retracted_at,
        sources=tuple(sorted(sources.get(rid, ()))),
    )


# ---------------------------------------------------------------------------------------------
# The raw reader
#
# A resolve or a plan reads every candidate row of a user. Through the ORM each field of each
# row went through a Python converter (a UUID object built and printed back, each datetime
# made aware) and each row through a 17-field dataclass constructor, which cost several times
# more than resolving the rows. The raw reader runs SQL with the ORM's WHERE and ORDER BY on a
# plain cursor, has the database print UUIDs and datetimes as text, and the records are built
# column by column, giving exactly the values the ORM path gives (tests/memory/
# test_selectors.py compares them). Only the two text templates differ between databases;
# another vendor, or settings where the text could differ, takes the ORM path.


def _text_sql(alias: str) -> tuple[str, str] | None:
    """The database's SQL for (a UUID column as its canonical text, a datetime column as UTC
    text that `datetime.fromisoformat` reads into the ORM's aware UTC datetime), as templates
    over the column `{0}`; None where the ORM must read instead."""
    connection = connections[alias]
    if not settings.USE_TZ or connection.timezone is not UTC:
        return None
    if connection.vendor == "sqlite":
        # Django stores a UUID as 32 lowercase hex digits and a datetime as naive UTC text.
        return ("substr({0}, 1, 8) || '-' || substr({0}, 9, 4) || '-' || substr({0}, 13, 4) "
                "|| '-' || substr({0}, 17, 4) || '-' || substr({0}, 21)", "{0} || '+00:00'")
    if connection.vendor == "postgresql":
        # Fixed-format text instead of psycopg's datetimes, which Django's Python-level
        # loader would convert one by one (most of the cost of fetching candidate rows).
        return ("{0}::text",
                "to_char({0} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00:00'")
    return None


class RawReader:
    """SELECTs of model fields on a plain cursor of one database, with the ORM's values:
    `column` writes a UUID field as its text and a datetime field as text for
    `parse_datetimes`; each statement is built once per database (`sql`)."""

    _built: dict[tuple[str, str], object] = {}

    def __init__(self, alias: str, uuid_sql: str, datetime_sql: str):
        self.alias = alias
        self.quote = connections[alias].ops.quote_name
        self._uuid_sql, self._datetime_sql = uuid_sql, datetime_sql

    def table(self, model) -> str:
        return self.quote(model._meta.db_table)

    def name(self, model, name: str, table: str = "") -> str:
        """A field's column, quoted (for WHERE, JOIN and ORDER BY)."""
        return table + self.quote(model._meta.get_field(name).column)

    def column(self, model, name: str, table: str = "") -> str:
        """A field in a SELECT, read as the ORM's value."""
        field = model._meta.get_field(name)
        sql = table + self.quote(field.column)
        kind = (field.target_field if field.is_relation else field).get_internal_type()
        if kind == "UUIDField":
            return self._uuid_sql.format(sql)
        if kind == "DateTimeField":
            return self._datetime_sql.format(sql)
        return sql

    def order(self, model, table: str = "") -> str:
        """The ORDER BY of the model's default ordering."""
        return ", ".join(self.name(model, name.lstrip("-"), table)
                         + (" DESC" if name.startswith("-") else " ASC")
                         for name in model._meta.ordering)

    def param(self, model, name: str, value):
        """`value` as the database stores the field `name` (a UUID is 32 hex digits on SQLite)."""
        field = model._meta.get_field(name)
        field = field.target_field if field.is_relation else field
        return field.get_db_prep_value(value, connections[self.alias])

    def sql(self, name: str, build):
        """`build(self)`, the statement(s) `name`, built once per database alias."""
        key = (self.alias, name)
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = build(self)
        return built

    def fetch(self, sql: str, params) -> list[tuple]:
        with connections[self.alias].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()


def raw_reader(alias: str) -> RawReader | None:
    """The raw reader of a database, or None where the ORM must read (`_text_sql`)."""
    templates = _text_sql(alias)
    return None if templates is None else RawReader(alias, *templates)


def parse_datetimes(column) -> list:
    """A column read through `RawReader.column` as the ORM's datetimes (None stays None)."""
    parse = datetime.fromisoformat
    if None in column:
        return [None if value is None else parse(value) for value in column]
    return list(map(parse, column))


def _record_sql(reader: RawReader) -> dict[str, str]:
    """RECORD_FIELDS of the records matching `{where}` in the model's order, each with its
    source message ids in one more column (an array on PostgreSQL, comma-joined text on
    SQLite; ids hold no comma): the records and their sources in one statement."""
    table = reader.table(MemoryRecord)
    select = ", ".join(reader.column(MemoryRecord, name) for name in RECORD_FIELDS)
    message = reader.column(MemorySource, "message", "s.")
    linked = (f"FROM {reader.table(MemorySource)} s WHERE {reader.name(MemorySource, 'memory', 's.')} "
              f"= {reader.name(MemoryRecord, 'id', table + '.')}")
    if connections[reader.alias].vendor == "postgresql":
        sources = f"ARRAY(SELECT {message} {linked})"
    else:
        sources = f"(SELECT group_concat({message}, ',') {linked})"
    return {
        "records": f"SELECT {select}, {sources} FROM {table} WHERE {{where}} "
                   f"ORDER BY {reader.order(MemoryRecord)}",
    }


def _read_records(reader: RawReader, where: str, params: list, username: str) -> list[DomainRecord]:
    """The records matching `where` (SQL over the record table), sources included, in the
    model's order: one query."""
    sql = reader.sql("records", _record_sql)
    rows = reader.fetch(sql["records"].format(where=where), params)
    if not rows:
        return []
    columns = list(zip(*rows, strict=True))
    linked = columns.pop()
    for index in _DATETIME_COLUMNS:
        columns[index] = parse_datetimes(columns[index])
    if linked and isinstance(next((x for x in linked if x), None), str):
        linked = [text.split(",") if text else None for text in linked]
    return _build_records(columns, linked, username)


def records_to_domain(queryset, username: str) -> list[DomainRecord]:
    """Materialise a queryset of MemoryRecord rows as pure-core records, sources included:
    one query (two on the ORM path). The raw reader reads the rows the queryset selects in the model's order; a
    queryset with an order or a slice of its own is read by the ORM."""
    reader = raw_reader(queryset.db)
    if reader is None or queryset.query.order_by or queryset.query.is_sliced:
        return _records_to_domain_orm(queryset, username)
    try:
        subquery, params = (queryset.order_by().values("pk").query
                            .get_compiler(using=queryset.db).as_sql())
    except EmptyResultSet:
        return []
    where = f"{reader.name(MemoryRecord, 'id')} IN ({subquery})"
    return _read_records(reader, where, list(params), username)


_DATETIME_COLUMNS = tuple(
    RECORD_FIELDS.index(name)
    for name in ("status_since", "valid_from", "valid_until", "recorded_at", "evidence_time",
                 "retracted_at")
)
# RECORD_FIELDS column → MemoryRecord (domain) field, for the columns stored as they are.
_COLUMN_FIELDS = {
    "id": "id", "key": "key", "value": "value", "status": "status",
    "status_since": "status_since", "authority": "authority", "confidence": "confidence",
    "valid_from": "valid_from", "valid_until": "valid_until", "recorded_at": "recorded_at",
    "evidence_time": "evidence_time", "supersedes_id": "supersedes",
    "retracted_at": "retracted_at", "version": "version",
}


def _build_records(columns: list, found_sources: list, username: str) -> list[DomainRecord]:
    """Domain records from columns in RECORD_FIELDS order (values already converted) and,
    per row, the list of its source message ids or None. Records of one scope share one
    `Scope` object."""
    n = len(columns[0])
    index = RECORD_FIELDS.index
    kinds, scope_ids, scenes = columns[index("scope_kind")], columns[index("scope_id")], columns[index("scene")]
    scopes: dict[tuple, Scope] = {}
    for key in set(zip(kinds, scope_ids, scenes, strict=True)):
        scopes[key] = scope_from_id(*key)
    empty: tuple = ()
    values = {field: columns[index(column)] for column, field in _COLUMN_FIELDS.items()}
    values["user"] = repeat(username, n)
    values["scope"] = list(map(scopes.__getitem__, zip(kinds, scope_ids, scenes, strict=True)))
    values["sources"] = [tuple(sorted(found)) if found else empty for found in found_sources]
    return build_slotted(DomainRecord, values, n)


def _records_to_domain_orm(queryset, username: str) -> list[DomainRecord]:
    rows = list(queryset.values_list(*RECORD_FIELDS))
    if not rows:
        return []
    sources: dict[str, list[str]] = defaultdict(list)
    links = MemorySource.objects.filter(memory_id__in=queryset.values("id")).values_list("memory_id", "message_id")
    for memory_id, message_id in links:
        sources[str(memory_id)].append(str(message_id))
    return [_to_domain(row, username, sources) for row in rows]


def context_scope_ids(ctx) -> list[str]:
    """The scope ids a context can see (R1 pre-filter in SQL; the resolver still decides)."""
    d = ctx.domain
    ids = [f"user:{d.user}"]
    if d.character:
        ids.append(f"character:{d.user}:{d.character}")
    if d.conversation:
        ids.append(f"conversation:{d.conversation}")
        if d.scene:
            ids.append(f"scene:{d.conversation}:{d.scene}")
    return ids


def candidate_records(ctx, keys: Iterable[str] | None = None) -> list[DomainRecord]:
    """The records a resolve for `ctx` considers (R1 pre-filtered by scope id), in the
    model's order: one query (two on the ORM path). Read with SQL written out once per database rather than a
    queryset compiled per request (the read of every resolve and plan)."""
    scope_ids = context_scope_ids(ctx)
    keys = list(keys) if keys else None
    reader = raw_reader(MemoryRecord.objects.db)
    if reader is None:
        qs = MemoryRecord.objects.filter(user=ctx.user, scope_id__in=scope_ids)
        if keys:
            qs = qs.filter(key__in=keys)
        return records_to_domain(qs, ctx.user.username)
    where = (f"{reader.name(MemoryRecord, 'user')} = %s AND {reader.name(MemoryRecord, 'scope_id')} "
             f"IN ({', '.join(['%s'] * len(scope_ids))})")
    params: list = [ctx.user.pk, *scope_ids]
    if keys:
        where += f" AND {reader.name(MemoryRecord, 'key')} IN ({', '.join(['%s'] * len(keys))})"
        params += keys
    return _read_records(reader, where, params, ctx.user.username)


def tombstones_of(user, keys: Iterable[str] | None = None) -> list[DomainTombstone]:
    qs = Tombstone.objects.filter(user=user)
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return [
        DomainTombstone(
            id=str(t[0]), user=user.username, scope_id=t[1], key=t[2], value_hash=t[3],
            forgotten_at=t[4], blocks_sources_before=t[5],
        )
        for t in qs.values_list("id", "scope_id", "key", "value_hash", "forgotten_at", "blocks_sources_before")
    ]


class Registry:
    """The key registry as the pure core needs it: which keys are `many`, labels, and which
    keys are pinned (I6: the relevance order puts them first)."""

    def __init__(self, rows: Iterable[tuple]):
        self.cardinality: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        pinned = []
        for key, cardinality, label, *flags in rows:
            self.cardinality[key] = cardinality
            self.labels[key] = label
            if flags and flags[0]:
                pinned.append(key)
        self.many_keys = frozenset(k for k, c in self.cardinality.items() if c == "many")
        self.pinned_keys = frozenset(pinned)

    def is_many(self, key: str) -> bool:
        return key in self.many_keys

    def label(self, key: str) -> str:
        return self.labels.get(key) or default_label(key)


@catalog.cached
def catalog_registry() -> Registry:
    """The whole key registry, cached per process while the catalog version holds
    (config.catalog): one query when cold, none when warm."""
    return Registry(KeyDefinition.objects.values_list("key", "cardinality", "label", "pinned"))


def registry(keys: Iterable[str] | None = None) -> Registry:
    """The registry (of `keys`, or all of it). In a request, the cached whole registry (a
    superset answers the same); elsewhere one query for just those keys."""
    if catalog.active():
        return catalog_registry()
    qs = KeyDefinition.objects.all()
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return Registry(qs.values_list("key", "cardinality", "label", "pinned"))


def user_secret(user) -> bytes:
    secret = MemoryProfile.objects.filter(user=user).values_list("secret", flat=True).first()
    return bytes.fromhex(secret) if secret else b""


def parse_uuid(value, *, field: str = "id") -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFound(f"No {field} {value!r}.") from None


def memory_get(record_id, *, user=None) -> MemoryRecord:
    """A record by id; with `user`, only that user's (another user's record is a 404)."""
    qs = MemoryRecord.objects.select_related("user")
    if user is not None:
        qs = qs.filter(user=user)
    record = qs.filter(pk=parse_uuid(record_id, field="memory")).first()
    if record is None:
        raise NotFound("No such memory.")
    return record


def memory_get_domain(record_id, *, user=None) -> DomainRecord:
    record = memory_get(record_id, user=user)
    return records_to_domain(MemoryRecord.objects.filter(pk=record.pk), record.user.username)[0]


def scope_id_valid(scope_id: str) -> bool:
    return bool(scope_id) and scope_id.split(":", 1)[0] in ("user", "character", "conversation", "scene")


def history_records(user, key: str, scope_id: str) -> list[DomainRecord]:
    if not scope_id_valid(scope_id):
        raise ValidationError("Not a scope id.", field="scope")
    qs = MemoryRecord.objects.filter(user=user, key=key, scope_id=scope_id)
    return records_to_domain(qs, user.username)


def last_named_key_query(user):
    """SPEC §8: "it" is the most recently named thing of the user — as a one-row, one-column
    queryset, so turn creation can read it inside a statement it runs anyway."""
    return (
        MemoryRecord.objects.filter(user=user, key__endswith=".name")
        .exclude(key__startswith="user.")
        .exclude(key__startswith="people.")
        .order_by("-recorded_at", "-version")
        .values_list("key", flat=True)[:1]
    )


def last_named_key(user) -> str | None:
    """SPEC §8: "it" is the most recently named thing of the user."""
    return next(iter(last_named_key_query(user)), None)


# ---------------------------------------------------------------------------------------------
# What a batch of writes reads (memory.writes): one statement


@dataclasses.dataclass(frozen=True)
class WriteState:
    """Everything W3–W9 read for a batch of asserts (see `memory.writes.Known`): every stored
    record of the scoped keys asked for (forgotten skeletons included, sources included), the
    tombstones and retraction times of their keys, and which of the keys are `many`."""

    records: dict[tuple[str, str], list[DomainRecord]]
    tombstones: list[DomainTombstone]
    retractions: dict[tuple[str, str, str], datetime]
    many_keys: frozenset[str]


def write_state(user, slots: Iterable[tuple[str, str]]) -> WriteState:
    """The state for the scoped keys `slots` ((scope_id, key) pairs) of `user`, read under the
    caller's lock in one statement on SQLite and PostgreSQL (records joined with their source
    links, tombstones, retractions and the keys' registry rows, as one UNION ALL), whatever
    the number of keys or stored records; the ORM reads it in five elsewhere."""
    slots = sorted(set(slots))
    keys = sorted({key for _, key in slots})
    scope_ids = sorted({scope_id for scope_id, _ in slots})
    records: dict[tuple[str, str], list[DomainRecord]] = {slot: [] for slot in slots}
    if not slots:
        return WriteState(records, [], {}, frozenset())
    reader = raw_reader(MemoryRecord.objects.db)
    if reader is None:
        return _write_state_orm(user, slots, keys, scope_ids, records)
    sql = reader.sql("write-state", _write_state_sql)
    key_list = ", ".join(["%s"] * len(keys))
    scope_list = ", ".join(["%s"] * len(scope_ids))
    statement = sql.format(keys=key_list, scopes=scope_list)
    params = [user.pk, *keys, *scope_ids, user.pk, *keys, user.pk, *keys, *keys]
    rows = reader.fetch(statement, params)
    username = user.username
    record_rows: dict[str, tuple] = {}
    sources: dict[str, list[str]] = {}
    tombstone_rows, retraction_rows, many = [], [], set()
    for row in rows:
        kind = row[0]
        if kind == "r":
            rid = row[1]
            if rid not in record_rows:
                record_rows[rid] = row[1:-1]
                sources[rid] = []
            if row[-1] is not None:
                sources[rid].append(row[-1])
        elif kind == "t":
            tombstone_rows.append(row)
        elif kind == "x":
            retraction_rows.append(row)
        elif row[3] == "many":
            many.add(row[2])
    if record_rows:
        columns = list(zip(*record_rows.values(), strict=True))
        for index in _DATETIME_COLUMNS:
            columns[index] = parse_datetimes(columns[index])
        built = _build_records(columns, [sources[rid] for rid in record_rows], username)
        for record in built:
            found = records.get((record.scope_id, record.key))
            if found is not None:
                found.append(record)
    tombstones = [
        DomainTombstone(id=row[1], user=username, scope_id=row[5], key=row[2], value_hash=row[3],
                        forgotten_at=forgotten_at, blocks_sources_before=blocks_before)
        for row, forgotten_at, blocks_before in zip(
            tombstone_rows, parse_datetimes([row[_T_FORGOTTEN] for row in tombstone_rows]),
            parse_datetimes([row[_T_BLOCKS] for row in tombstone_rows]), strict=True)
    ]
    retractions: dict[tuple[str, str, str], datetime] = {}
    for row, at in zip(retraction_rows, parse_datetimes([row[_X_AT] for row in retraction_rows]), strict=True):
        slot = (row[5], row[2], row[3] or "")
        if slot not in retractions or at > retractions[slot]:
            retractions[slot] = at
    for found in records.values():
        found.sort(key=lambda r: r.version)
    return WriteState(records, tombstones, retractions, frozenset(many))


# Positions in a write-state row: the kind, then RECORD_FIELDS, then a source message id.
# Tombstone, retraction and registry rows reuse columns of a matching type.
_W_WIDTH = 1 + len(RECORD_FIELDS) + 1
_T_FORGOTTEN = 1 + RECORD_FIELDS.index("status_since")
_T_BLOCKS = 1 + RECORD_FIELDS.index("valid_from")
_X_AT = 1 + RECORD_FIELDS.index("retracted_at")


def _write_state_sql(reader: RawReader) -> str:
    """The write-state statement, with `{keys}` and `{scopes}` placeholders lists to fill."""
    from .models import SlotRetraction

    column, name = reader.column, reader.name

    def row(kind: str, placed: dict[int, str]) -> str:
        cells = [f"'{kind}'"] + ["NULL"] * (_W_WIDTH - 1)
        for position, sql in placed.items():
            cells[position] = sql
        return ", ".join(cells)

    records = ", ".join(column(MemoryRecord, field, "r.") for field in RECORD_FIELDS)
    def at(field: str) -> int:
        return 1 + RECORD_FIELDS.index(field)

    tombstone = row("t", {
        at("id"): column(Tombstone, "id", "t."), at("key"): name(Tombstone, "key", "t."),
        at("value"): name(Tombstone, "value_hash", "t."), at("scope_id"): name(Tombstone, "scope_id", "t."),
        _T_FORGOTTEN: column(Tombstone, "forgotten_at", "t."),
        _T_BLOCKS: column(Tombstone, "blocks_sources_before", "t."),
    })
    retraction = row("x", {
        at("key"): name(SlotRetraction, "key", "x."), at("value"): name(SlotRetraction, "value_hash", "x."),
        at("scope_id"): name(SlotRetraction, "scope_id", "x."), _X_AT: column(SlotRetraction, "retracted_at", "x."),
    })
    registry_row = row("k", {
        at("key"): name(KeyDefinition, "key", "k."), at("value"): name(KeyDefinition, "cardinality", "k."),
    })
    return (
        f"SELECT 'r', {records}, {column(MemorySource, 'message', 's.')} "
        f"FROM {reader.table(MemoryRecord)} r LEFT JOIN {reader.table(MemorySource)} s "
        f"ON {name(MemorySource, 'memory', 's.')} = {name(MemoryRecord, 'id', 'r.')} "
        f"WHERE {name(MemoryRecord, 'user', 'r.')} = %s AND {name(MemoryRecord, 'key', 'r.')} IN ({{keys}}) "
        f"AND {name(MemoryRecord, 'scope_id', 'r.')} IN ({{scopes}}) "
        f"UNION ALL SELECT {tombstone} FROM {reader.table(Tombstone)} t "
        f"WHERE {name(Tombstone, 'user', 't.')} = %s AND {name(Tombstone, 'key', 't.')} IN ({{keys}}) "
        f"UNION ALL SELECT {retraction} FROM {reader.table(SlotRetraction)} x "
        f"WHERE {name(SlotRetraction, 'user', 'x.')} = %s AND {name(SlotRetraction, 'key', 'x.')} IN ({{keys}}) "
        f"UNION ALL SELECT {registry_row} FROM {reader.table(KeyDefinition)} k "
        f"WHERE {name(KeyDefinition, 'key', 'k.')} IN ({{keys}})"
    )


def _write_state_orm(user, slots, keys, scope_ids, records) -> WriteState:
    from django.db.models import Max

    from .models import SlotRetraction

    qs = MemoryRecord.objects.filter(user=user, key__in=keys, scope_id__in=scope_ids)
    for record in records_to_domain(qs, user.username):
        found = records.get((record.scope_id, record.key))
        if found is not None:
            found.append(record)
    retractions = {
        (scope_id, key, hashed or ""): at
        for scope_id, key, hashed, at in SlotRetraction.objects.filter(user=user, key__in=keys)
        .values("scope_id", "key", "value_hash").annotate(at=Max("retracted_at"))
        .values_list("scope_id", "key", "value_hash", "at")
    }
    return WriteState(records, tombstones_of(user, keys), retractions, registry(keys).many_keys)


def _registry_tombstones_secret(user, keys) -> tuple[Registry, list[DomainTombstone], bytes]:
    """`registry()`, `tombstones_of(user, keys)` and — when a tombstone holds a value hash —
    `user_secret(user)`, in two queries whatever the data (one in a request, where the
    registry is cached) (the secret comes with the
    tombstones), so a resolve's query count does not depend on what was forgotten. Written
    out once per database like the candidate read (same WHERE and ORDER BY as the ORM's)."""
    reader = raw_reader(Tombstone.objects.db)
    if reader is None:
        keyed = registry()
        tombstones = tombstones_of(user, keys)
        secret = user_secret(user) if any(t.value_hash for t in tombstones) else b""
        return keyed, tombstones, secret
    where, params = f"{reader.name(Tombstone, 'user', 't.')} = %s", [user.pk]
    if keys is not None:
        keys = list(keys)
        if not keys:
            where, params = "1 = 0", []
        else:
            where += f" AND {reader.name(Tombstone, 'key', 't.')} IN ({', '.join(['%s'] * len(keys))})"
            params += keys
    sql = reader.sql("registry-tombstones", _registry_tombstone_sql)
    rows = reader.fetch(sql["tombstones"].format(where=where), params)
    # In a request the registry comes from the process cache (config.catalog).
    keyed = catalog_registry() if catalog.active() else Registry(reader.fetch(sql["registry"], []))
    username = user.username
    tombstones = [
        DomainTombstone(
            id=t[0], user=username, scope_id=t[1], key=t[2], value_hash=t[3],
            forgotten_at=forgotten_at, blocks_sources_before=blocks_before,
        )
        for t, forgotten_at, blocks_before in zip(
            rows, parse_datetimes([t[4] for t in rows]), parse_datetimes([t[5] for t in rows]),
            strict=True,
        )
    ]
    secret = b""
    if any(t.value_hash for t in tombstones):
        hexed = rows[0][6]
        secret = bytes.fromhex(hexed) if hexed else b""
    return keyed, tombstones, secret


def _registry_tombstone_sql(reader: RawReader) -> dict[str, str]:
    """A user's tombstones (`{where}` over the alias `t`) with the user's secret, in the
    model's order; and the key registry."""
    column = reader.column
    tomb = ", ".join(column(Tombstone, name, "t.") for name in (
        "id", "scope_id", "key", "value_hash", "forgotten_at", "blocks_sources_before"))
    keys = ", ".join(column(KeyDefinition, name) for name in ("key", "cardinality", "label", "pinned"))
    return {
        "tombstones": (
            f"SELECT {tomb}, {column(MemoryProfile, 'secret', 'p.')} "
            f"FROM {reader.table(Tombstone)} t "
            f"LEFT JOIN {reader.table(MemoryProfile)} p "
            f"ON {reader.name(MemoryProfile, 'user', 'p.')} = {reader.name(Tombstone, 'user', 't.')} "
            f"WHERE {{where}} ORDER BY {reader.order(Tombstone, 't.')}"
        ),
        "registry": f"SELECT {keys} FROM {reader.table(KeyDefinition)} "
                    f"ORDER BY {reader.order(KeyDefinition)}",
    }


class ContextResolution:
    """Everything one resolve needs and produces, for one context (SPEC §3, §5)."""

    def __init__(self, ctx, keys=None):
        from .projection import project

        self.ctx = ctx
        cfg = settings.COMPANION
        # Every object built here is kept until the request ends (see gc_paused).
        with gc_paused():
            remembered = remembered_now(ctx.user, context=ctx, keys=keys)
            self.records, self.registry = remembered.records, remembered.registry
            self.tombstones = remembered.tombstones
            self.resolution = remembered.resolutions[None]
            self.projection = project(
                self.resolution.active, labels=self.registry.labels,
                many_keys=self.registry.many_keys, likely=cfg["CERTAINTY_LIKELY"],
                uncertain=cfg["CERTAINTY_UNCERTAIN"],
            )
        metrics.resolve_observed(len(self.records))  # SPEC §12 O3

    def log_line(self) -> str:
        """SPEC §12: ids, counts, reasons and versions only — never a value."""
        counts: dict[str, int] = {}
        for e in self.resolution.excluded:
            counts[e.reason] = counts.get(e.reason, 0) + 1
        for e in self.projection.excluded:
            counts["prompt_" + e.reason] = counts.get("prompt_" + e.reason, 0) + 1
        parts = [
            f"user_id={self.ctx.user.pk}",
            f"memory_candidates={len(self.records)}",
            f"memory_active={len(self.resolution.active)}",
            f"memory_prompt={len(self.projection.prompt)}",
        ]
        parts += [f"excluded_{k.replace('-', '_')}={v}" for k, v in sorted(counts.items())]
        from .domain import RESOLVER_VERSION

        parts.append(f"resolver_version={RESOLVER_VERSION}")
        return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# What is remembered now (the pages and the API read it through here)


@dataclasses.dataclass(frozen=True)
class Remembered:
    """What is remembered now for one user (SPEC §3): the records read, the key registry, the
    tombstones, and the resolver's answer — for one context, or for every scope of the user
    (one resolution per scope id)."""

    records: list[DomainRecord]
    registry: Registry
    tombstones: list[DomainTombstone]
    resolutions: dict[str | None, Resolution]  # by scope id; None: the one context asked for
    now: datetime

    @property
    def active(self) -> list[DomainRecord]:
        """R7 order (key, then id) across every resolution."""
        if len(self.resolutions) == 1:
            return list(next(iter(self.resolutions.values())).active)
        found = [r for resolution in self.resolutions.values() for r in resolution.active]
        return sorted(found, key=lambda r: (r.key, r.id))

    @property
    def by_id(self) -> dict[str, DomainRecord]:
        return {r.id: r for r in self.records}

    def explain(self, record_id: str):
        """R8 for a record that was read, else None."""
        for resolution in self.resolutions.values():
            found = resolution.explain(record_id)
            if found is not None:
                return found
        return None


def remembered_now(user, *, now: datetime | None = None, context=None, keys=None) -> Remembered:
    """What the resolver keeps for `user` (SPEC §3): for one loaded `context` (the resolve
    endpoint, prompt plans, support's explain), or — without one — in every scope the user has
    (the memories and conversation pages). The records, their sources, the tombstones, the
    registry and the secret are read in bulk, so the query count does not depend on the data.

    Every scope at once is one pure resolve per scope: R1 keeps a scope's records for any
    context that includes that scope, and supersession and precedence never cross scopes (a
    slot lives in one scope), so each scope's answer is exactly the resolver's for every
    context containing it. F5: what the pages show is what the resolver keeps — nothing else.
    Forgotten skeletons are not read there: R2 excludes them and they supersede nothing (R5
    counts only records past R1–R4).

    Every object built here is kept until the request ends, so the cyclic garbage collector
    is paused while they are built (`gc_paused`; it could free none of them)."""
    with gc_paused():
        return _remembered(user, now=now, context=context, keys=keys)


def _remembered(user, *, now, context, keys) -> Remembered:
    from .domain import Context
    from .resolver import resolve

    keys = list(keys) if keys else None
    if context is not None:
        domain = context.domain
        if domain.now.tzinfo is not UTC and domain.now.utcoffset() is not None:
            # The resolver compares `now` with every record's times: in the records' own tzinfo
            # (UTC) each comparison is a plain one, in an equal but different tzinfo object (a
            # parsed `now` carries ZoneInfo("UTC")) each costs two utcoffset() calls.
            domain = dataclasses.replace(domain, now=domain.now.astimezone(UTC))
        records = candidate_records(context, keys)
        contexts = {None: domain}
        now = domain.now
    else:
        if now is None:
            from config.clock import db_now

            now = db_now()
        qs = MemoryRecord.objects.filter(user=user).exclude(status="forgotten")
        if keys:
            qs = qs.filter(key__in=keys)
        records = records_to_domain(qs, user.username)
        contexts = {}
        for record in records:
            if record.scope_id not in contexts:
                scope = record.scope
                contexts[record.scope_id] = Context(
                    user=user.username, character=scope.character, conversation=scope.conversation,
                    scene=scope.scene, now=now,
                )
    keyed, tombstones, secret = _registry_tombstones_secret(user, keys)
    if context is not None:
        resolutions = {None: resolve(records, tombstones, contexts[None],
                                     many_keys=keyed.many_keys, secret=secret)}
    else:
        by_scope: dict[str, list[DomainRecord]] = defaultdict(list)
        for record in records:
            by_scope[record.scope_id].append(record)
        resolutions = {
            scope_id: resolve(by_scope[scope_id], tombstones, contexts[scope_id],
                              many_keys=keyed.many_keys, secret=secret)
            for scope_id in sorted(by_scope)
        }
    return Remembered(records, keyed, tombstones, resolutions, now)


@dataclasses.dataclass(frozen=True)
class SlotHistory:
    """W11 for one scoped key: every record in history order, with its effective end, and the
    resolver's answer at `now` for the same records."""

    records: list[DomainRecord]  # in history order (valid_from, version, id)
    ends: dict[str, datetime | None]
    remembered: Remembered
    many: bool
    label: str

    @property
    def current(self) -> set[str]:
        return {r.id for r in self.remembered.active}


def slot_history(user, *, key: str, scope_id: str, now: datetime | None = None) -> SlotHistory:
    """History of one scoped key (W11) for the pages: what `/memory/history` lists, plus which
    record is current now (R1–R6, with the tombstones of that key)."""
    from .domain import Context
    from .resolver import effective_ends, history_order, resolve

    if now is None:
        from config.clock import db_now

        now = db_now()
    records = history_records(user, key, scope_id)
    keyed, tombstones, secret = _registry_tombstones_secret(user, [key])
    many = keyed.is_many(key)
    resolutions = {}
    if records:
        scope = records[0].scope
        context = Context(user=user.username, character=scope.character,
                          conversation=scope.conversation, scene=scope.scene, now=now)
        resolutions[scope_id] = resolve(records, tombstones, context, many_keys=keyed.many_keys,
                                        secret=secret)
    remembered = Remembered(records, keyed, tombstones, resolutions, now)
    return SlotHistory(history_order(records), effective_ends(records, many=many), remembered,
                       many, keyed.label(key))


# ---------------------------------------------------------------------------------------------
# Reads of the pages (new functions only: the reads above stay as the API and resolver use them)


def key_templates(keys: Iterable[str] | None = None) -> dict[str, str]:
    """The registry's sentence templates for the pages ("Your dog is called {value}"), by key;
    keys without one are left out. One query."""
    qs = KeyDefinition.objects.exclude(template="")
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return dict(qs.values_list("key", "template"))


@dataclasses.dataclass(frozen=True)
class Skeleton:
    """What stays of a forgotten record (F2): where and when, never the value."""

    id: str
    key: str
    scope_id: str
    valid_from: datetime
    recorded_at: datetime


def memory_skeletons(user, ids: Iterable[str]) -> list[Skeleton]:
    """Forgotten records of `user` among `ids` (one query; none without ids)."""
    wanted = []
    for value in ids:
        try:
            wanted.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    if not wanted:
        return []
    rows = MemoryRecord.objects.filter(user=user, pk__in=wanted, status="forgotten").values_list(
        "id", "key", "scope_id", "valid_from", "recorded_at")
    return [Skeleton(str(i), key, scope_id, valid_from, recorded_at) for i, key, scope_id, valid_from, recorded_at in rows]


def no_longer_true(remembered: Remembered) -> list[DomainRecord]:
    """What was marked no longer true (W10) and holds nothing now: per retracted slot (the
    scoped key; a value slot for a `many` key) whose resolver answer has no active record, the
    record that was current when it was retracted (R6 order: authority, valid time, version).
    A `many` key's correction retracts the old value slot at the instant it records the new
    value: that is a correction, not a "no longer true", and is left out. Reads nothing."""
    from .domain import AUTHORITY_RANK, normalise_value

    many = remembered.registry.is_many
    active_slots = {
        (r.scope_id, r.key, normalise_value(r.value) if many(r.key) else "") for r in remembered.active
    }
    corrected_at = {
        (r.scope_id, r.key, r.recorded_at) for r in remembered.records if r.authority == "user-corrected"
    }
    best: dict[tuple, DomainRecord] = {}
    for r in remembered.records:
        if r.retracted_at is None or r.status == "forgotten":
            continue
        slot = (r.scope_id, r.key, normalise_value(r.value) if many(r.key) else "")
        if slot in active_slots or (many(r.key) and (r.scope_id, r.key, r.retracted_at) in corrected_at):
            continue
        rank = (r.retracted_at, AUTHORITY_RANK[r.authority], r.valid_from, r.version, r.id)
        held = best.get(slot)
        if held is None or rank > (held.retracted_at, AUTHORITY_RANK[held.authority], held.valid_from,
                                   held.version, held.id):
            best[slot] = r
    return sorted(best.values(), key=lambda r: (r.retracted_at, r.id), reverse=True)


@dataclasses.dataclass(frozen=True)
class ForgottenEntry:
    """A tombstone as the forgotten page shows it (F1): never a value."""

    id: str
    key: str
    scope_id: str
    one_value: bool
    forgotten_at: datetime
    forgotten_by: str


def forgotten_entries(user) -> list[ForgottenEntry]:
    """The user's tombstones, newest first, with who asked (one query)."""
    rows = Tombstone.objects.filter(user=user).order_by("-forgotten_at", "id").values_list(
        "id", "key", "scope_id", "value_hash", "forgotten_at", "forgotten_by")
    return [ForgottenEntry(str(i), key, scope_id, bool(hashed), at, by) for i, key, scope_id, hashed, at, by in rows]
