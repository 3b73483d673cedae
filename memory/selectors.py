"""Reads of memory state. Every query filters by user first (SPEC §0). The resolver's
candidate read is one query for records, one for their sources and one for tombstones,
whatever the number of records (DESIGN: constant query counts)."""

from __future__ import annotations

import dataclasses
import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from itertools import repeat

from django.core.exceptions import EmptyResultSet
from django.db import connections

from config import metrics
from config.errors import NotFound, ValidationError

from .domain import MemoryRecord as DomainRecord
from .domain import Scope, default_label
from .domain import Tombstone as DomainTombstone
from .models import KeyDefinition, MemoryProfile, MemoryRecord, MemorySource, Tombstone
from .resolver import build_slotted, gc_paused

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
# Reading tuples on the hot path
#
# A resolve or a plan reads every candidate row of a user. Through the ORM each field of each
# row went through a Python converter (a UUID object built and printed back, each datetime
# made aware) and each row through a 17-field dataclass constructor, which cost several times
# more than resolving the rows. The readers below run the same SQL (same WHERE, same ORDER
# BY) on a plain cursor, let the database format UUIDs as text, and build the records column
# by column, giving exactly the values the ORM path gives. Other database vendors, or
# settings where the two could differ, take the ORM path.


def _uuid_text_sqlite(value):
    """SQLite stores a UUIDField as 32 lowercase hex digits: the canonical text without
    `uuid.UUID` (anything else goes through it, as the ORM would)."""
    if value is None:
        return None
    if len(value) == 32:
        return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
    return str(uuid.UUID(value))


def _uuid_text(value):
    return None if value is None else str(value)


def _aware_utc(value):
    """SQLite datetimes come back naive (UTC): the ORM makes them aware in UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _same(value):
    return value


class _RawReader:
    """How one vendor's raw values become the ORM's: Python converters for rows read with
    the ORM's SQL (`uuid_text`, `aware`), and SQL expressions for hand-written reads
    (`uuid_sql`: a UUID column as its canonical text; `datetime_sql` and `parse_datetime`:
    a datetime column as text the C parser reads into an aware UTC datetime, or None when
    the driver already gives aware datetimes)."""

    def __init__(self, vendor, uuid_text, aware, uuid_sql, datetime_sql=None, parse_datetime=None):
        self.vendor = vendor
        self.uuid_text = uuid_text
        self.aware = aware
        self.uuid_sql = uuid_sql
        self.datetime_sql = datetime_sql
        self.parse_datetime = parse_datetime


def _sqlite_uuid_sql(column: str) -> str:
    c = column
    return (f"substr({c}, 1, 8) || '-' || substr({c}, 9, 4) || '-' || substr({c}, 13, 4) || '-' "
            f"|| substr({c}, 17, 4) || '-' || substr({c}, 21)")


def _raw_reader(alias: str) -> _RawReader | None:
    from django.conf import settings

    connection = connections[alias]
    if not settings.USE_TZ or connection.timezone is not UTC:
        return None
    if connection.vendor == "sqlite":
        # Django stores UUIDs as 32 lowercase hex digits and datetimes as naive UTC text;
        # an expression column has no declared type, so no converter runs on it and
        # `datetime.fromisoformat` reads "<text>+00:00" into a datetime in `UTC`.
        return _RawReader("sqlite", _uuid_text_sqlite, _aware_utc, _sqlite_uuid_sql,
                          lambda c: f"{c} || '+00:00'", datetime.fromisoformat)
    if connection.vendor == "postgresql":
        # psycopg gives UUID objects and datetimes already aware in the connection's UTC, but
        # each datetime goes through Django's Python-level loader (most of the cost of
        # fetching candidate rows): hand-written reads ask for fixed-format UTC text instead,
        # which `datetime.fromisoformat` reads into the same datetime in `UTC`.
        return _RawReader(
            "postgresql", _uuid_text, _same, lambda c: f"{c}::text",
            lambda c: f"to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00:00'",
            datetime.fromisoformat,
        )
    return None


def raw_values(queryset) -> list[tuple] | None:
    """The rows of a `values_list` queryset through a plain cursor (same SQL), or None when
    the vendor is not one whose raw values are known to match the ORM's."""
    if _raw_reader(queryset.db) is None:
        return None
    try:
        sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    except EmptyResultSet:
        return []
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def records_to_domain(queryset, username: str) -> list[DomainRecord]:
    """Materialise a queryset of MemoryRecord rows as pure-core records, sources included
    (two queries: rows as tuples, then their source links). Records of one scope share one
    `Scope` object (the resolver caches its scope test per object)."""
    reader = _raw_reader(queryset.db)
    if reader is None:
        return _records_to_domain_orm(queryset, username)
    rows = raw_values(queryset.values_list(*RECORD_FIELDS))
    if not rows:
        return []
    links = raw_values(
        MemorySource.objects.filter(memory_id__in=queryset.values("id"))
        .values_list("memory_id", "message_id")
        .order_by()
    )
    text, aware = reader.uuid_text, reader.aware
    columns = list(zip(*rows, strict=True))
    raw_ids = columns[0]
    for index in _UUID_COLUMNS:
        columns[index] = list(map(text, columns[index]))
    for index in _DATETIME_COLUMNS:
        columns[index] = list(map(aware, columns[index]))
    sources: dict = {}
    for memory_id, message_id in links:
        sources.setdefault(memory_id, []).append(text(message_id))
    return _build_records(columns, list(map(sources.get, raw_ids)), username)


_UUID_COLUMNS = (RECORD_FIELDS.index("id"), RECORD_FIELDS.index("supersedes_id"))
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
    per row, the list of its source message ids or None."""
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
    alias = MemoryRecord.objects.db
    reader = _raw_reader(alias)
    if reader is None:
        qs = MemoryRecord.objects.filter(user=ctx.user, scope_id__in=context_scope_ids(ctx))
        if keys:
            qs = qs.filter(key__in=list(keys))
        return records_to_domain(qs, ctx.user.username)
    # The read of every resolve and plan: the SQL the queryset of the ORM path compiles to
    # (same WHERE, same ORDER BY), written out once per database, with UUIDs and datetimes as
    # text from the database, so a request pays neither for building and compiling
    # querysets nor for Python-level converters per value.
    where, params = _candidate_where(alias, ctx.user.pk, context_scope_ids(ctx),
                                     list(keys) if keys else None)
    sql = _candidate_sql(alias, reader)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql["records"].format(where=where), params)
        rows = cursor.fetchall()
        if not rows:
            return []
        cursor.execute(sql["sources"].format(where=where), params)
        links = cursor.fetchall()
    columns = list(zip(*rows, strict=True))
    parse = reader.parse_datetime
    if parse is not None:
        for index in _DATETIME_COLUMNS:
            column = columns[index]
            if None in column:
                columns[index] = [None if v is None else parse(v) for v in column]
            else:
                columns[index] = list(map(parse, column))
    sources: dict[str, list[str]] = {}
    for memory_id, message_id in links:
        found = sources.get(memory_id)
        if found is None:
            sources[memory_id] = [message_id]
        else:
            found.append(message_id)
    return _build_records(columns, list(map(sources.get, columns[0])), ctx.user.username)


def _candidate_where(alias: str, user_pk, scope_ids: list[str], keys: list[str] | None) -> tuple[str, list]:
    quote = connections[alias].ops.quote_name
    where = f"{quote('user_id')} = %s AND {quote('scope_id')} IN ({', '.join(['%s'] * len(scope_ids))})"
    params: list = [user_pk, *scope_ids]
    if keys:
        where += f" AND {quote('key')} IN ({', '.join(['%s'] * len(keys))})"
        params += keys
    return where, params


_CANDIDATE_SQL: dict[str, dict[str, str]] = {}


def _candidate_sql(alias: str, reader: _RawReader) -> dict[str, str]:
    """SELECT RECORD_FIELDS ... ORDER BY the model's ordering, and the source links of the
    same rows, with table and column names taken from the models."""
    sql = _CANDIDATE_SQL.get(alias)
    if sql is None:
        quote = connections[alias].ops.quote_name
        meta = MemoryRecord._meta
        select = []
        for name in RECORD_FIELDS:
            column = quote(meta.get_field(name).column)
            index = RECORD_FIELDS.index(name)
            if index in _UUID_COLUMNS:
                column = reader.uuid_sql(column)
            elif index in _DATETIME_COLUMNS and reader.datetime_sql is not None:
                column = reader.datetime_sql(column)
            select.append(column)
        order = []
        for name in meta.ordering:
            field = meta.get_field(name.lstrip("-"))
            order.append(quote(field.column) + (" DESC" if name.startswith("-") else " ASC"))
        links = MemorySource._meta
        memory = quote(links.get_field("memory").column)
        message = quote(links.get_field("message").column)
        sql = _CANDIDATE_SQL[alias] = {
            "records": f"SELECT {', '.join(select)} FROM {quote(meta.db_table)} "
                       f"WHERE {{where}} ORDER BY {', '.join(order)}",
            "sources": f"SELECT {reader.uuid_sql(memory)}, {reader.uuid_sql(message)} "
                       f"FROM {quote(links.db_table)} WHERE {memory} IN "
                       f"(SELECT {quote(meta.pk.column)} FROM {quote(meta.db_table)} WHERE {{where}})",
        }
    return sql


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
    """The key registry as the pure core needs it: which keys are `many`, and labels."""

    def __init__(self, rows: Iterable[tuple[str, str, str]]):
        self.cardinality: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        for key, cardinality, label in rows:
            self.cardinality[key] = cardinality
            self.labels[key] = label
        self.many_keys = frozenset(k for k, c in self.cardinality.items() if c == "many")

    def is_many(self, key: str) -> bool:
        return key in self.many_keys

    def label(self, key: str) -> str:
        return self.labels.get(key) or default_label(key)


def registry(keys: Iterable[str] | None = None) -> Registry:
    qs = KeyDefinition.objects.all()
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return Registry(qs.values_list("key", "cardinality", "label"))


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


def last_named_key(user) -> str | None:
    """SPEC §8: "it" is the most recently named thing of the user."""
    return (
        MemoryRecord.objects.filter(user=user, key__endswith=".name")
        .exclude(key__startswith="user.")
        .exclude(key__startswith="people.")
        .order_by("-recorded_at", "-version")
        .values_list("key", flat=True)
        .first()
    )


def _registry_tombstones_secret(user, keys) -> tuple[Registry, list[DomainTombstone], bytes]:
    """`registry()`, `tombstones_of(user, keys)` and — when a tombstone holds a value hash —
    `user_secret(user)`, in two queries whatever the data (the secret comes with the
    tombstones), so a resolve's query count does not depend on what was forgotten. Written
    out once per database like the candidate read (same WHERE and ORDER BY as the ORM's)."""
    alias = Tombstone.objects.db
    reader = _raw_reader(alias)
    if reader is None:
        tombstones = tombstones_of(user, keys)
        secret = user_secret(user) if any(t.value_hash for t in tombstones) else b""
        return registry(), tombstones, secret
    sql = _registry_tombstone_sql(alias, reader)
    quote = connections[alias].ops.quote_name
    where, params = f"t.{quote('user_id')} = %s", [user.pk]
    if keys is not None:
        keys = list(keys)
        if not keys:
            where, params = "1 = 0", []
        else:
            where += f" AND t.{quote('key')} IN ({', '.join(['%s'] * len(keys))})"
            params += keys
    with connections[alias].cursor() as cursor:
        cursor.execute(sql["tombstones"].format(where=where), params)
        rows = cursor.fetchall()
        cursor.execute(sql["registry"])
        registry_rows = cursor.fetchall()
    parse = reader.parse_datetime
    username = user.username
    tombstones = [
        DomainTombstone(
            id=t[0], user=username, scope_id=t[1], key=t[2], value_hash=t[3],
            forgotten_at=parse(t[4]), blocks_sources_before=parse(t[5]),
        )
        for t in rows
    ]
    secret = b""
    if any(t.value_hash for t in tombstones):
        hexed = rows[0][6]
        secret = bytes.fromhex(hexed) if hexed else b""
    return Registry(registry_rows), tombstones, secret


_REGISTRY_TOMBSTONE_SQL: dict[str, dict[str, str]] = {}


def _registry_tombstone_sql(alias: str, reader: _RawReader) -> dict[str, str]:
    sql = _REGISTRY_TOMBSTONE_SQL.get(alias)
    if sql is None:
        quote = connections[alias].ops.quote_name
        tomb, profile, keydef = Tombstone._meta, MemoryProfile._meta, KeyDefinition._meta

        def col(meta, name):
            return quote(meta.get_field(name).column)

        def order(meta, prefix=""):
            return ", ".join(
                prefix + quote(meta.get_field(n.lstrip("-")).column) + (" DESC" if n.startswith("-") else " ASC")
                for n in meta.ordering
            )

        sql = _REGISTRY_TOMBSTONE_SQL[alias] = {
            "tombstones": (
                f"SELECT {reader.uuid_sql('t.' + col(tomb, 'id'))}, t.{col(tomb, 'scope_id')}, "
                f"t.{col(tomb, 'key')}, t.{col(tomb, 'value_hash')}, "
                f"{reader.datetime_sql('t.' + col(tomb, 'forgotten_at'))}, "
                f"{reader.datetime_sql('t.' + col(tomb, 'blocks_sources_before'))}, "
                f"p.{col(profile, 'secret')} FROM {quote(tomb.db_table)} t "
                f"LEFT JOIN {quote(profile.db_table)} p ON p.{col(profile, 'user')} = t.{col(tomb, 'user')} "
                f"WHERE {{where}} ORDER BY {order(tomb, 't.')}"
            ),
            "registry": (
                f"SELECT {col(keydef, 'key')}, {col(keydef, 'cardinality')}, {col(keydef, 'label')} "
                f"FROM {quote(keydef.db_table)} ORDER BY {order(keydef)}"
            ),
        }
    return sql


class ContextResolution:
    """Everything one resolve needs and produces, for one context (SPEC §3, §5)."""

    def __init__(self, ctx, keys=None):
        from django.conf import settings

        from .projection import project
        from .resolver import resolve

        keys = list(keys) if keys else None
        self.ctx = ctx
        cfg = settings.COMPANION
        # Every object built here is kept until the request ends (see gc_paused).
        with gc_paused():
            self.records = candidate_records(ctx, keys)
            self.registry, self.tombstones, secret = _registry_tombstones_secret(ctx.user, keys)
            # The resolver compares `now` with every record's times: in the records' own
            # tzinfo (UTC) each comparison is a plain one, in an equal but different tzinfo
            # object (a parsed `now` carries ZoneInfo("UTC")) each costs two utcoffset() calls.
            context = ctx.domain
            if context.now.tzinfo is not UTC and context.now.utcoffset() is not None:
                context = dataclasses.replace(context, now=context.now.astimezone(UTC))
            self.resolution = resolve(
                self.records, self.tombstones, context, many_keys=self.registry.many_keys,
                secret=secret,
            )
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
