"""Reads of memory state. Every query filters by user first (SPEC §0). The resolver's
candidate read is one query for records with their sources and one for tombstones,
whatever the number of records (DESIGN: constant query counts)."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import EmptyResultSet

from config import catalog, metrics
from config.builders import gc_paused
from config.clock import db_now
from config.errors import NotFound, ValidationError
from config.storage import raw_reader
from conversations.domain import Context

from . import storage
from .current import Resolved, resolve_context
from .domain import (
    RESOLVER_VERSION,
    RecordState,
    Resolution,
    default_label,
)
from .domain import MemoryRecord as DomainRecord
from .domain import Tombstone as DomainTombstone
from .history import effective_ends, history_order
from .models import (
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    MemoryVersion,
    SlotRetraction,
    Tombstone,
)
from .projection import project
from .resolver import record_states, resolve
from .storage import MEMORY_CACHE, RECORD_FIELDS, CachedMemory, read_records, scope_from_id


def row_to_domain(row: tuple, username: str, sources: dict) -> DomainRecord:
    (
        id_,
        key,
        value,
        kind,
        scope_id,
        scene,
        status,
        status_since,
        authority,
        confidence,
        valid_from,
        valid_until,
        recorded_at,
        evidence_time,
        supersedes,
        retracted_at,
        version,
    ) = row
    rid = str(id_)
    return DomainRecord(
        id=rid,
        user=username,
        key=key,
        value=value,
        scope=scope_from_id(kind, scope_id, scene),
        authority=authority,
        valid_from=valid_from,
        recorded_at=recorded_at,
        evidence_time=evidence_time,
        version=version,
        status=status,
        status_since=status_since,
        confidence=confidence,
        valid_until=valid_until,
        supersedes=str(supersedes) if supersedes else None,
        retracted_at=retracted_at,
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


def records_to_domain(queryset, username: str) -> list[DomainRecord]:
    """Materialise a queryset of MemoryRecord rows as pure-core records, sources included:
    one query (two on the ORM path). The raw reader reads the rows the queryset selects in the model's order; a
    queryset with an order or a slice of its own is read by the ORM."""
    reader = raw_reader(queryset.db)
    if reader is None or queryset.query.order_by or queryset.query.is_sliced:
        return _records_to_domain_orm(queryset, username)
    try:
        subquery, params = (
            queryset.order_by().values("pk").query.get_compiler(using=queryset.db).as_sql()
        )
    except EmptyResultSet:
        return []
    where = f"{reader.name(MemoryRecord, 'id')} IN ({subquery})"
    return read_records(reader, where, list(params), username)


def _records_to_domain_orm(queryset, username: str) -> list[DomainRecord]:
    rows = list(queryset.values_list(*RECORD_FIELDS))
    if not rows:
        return []
    sources: dict[str, list[str]] = defaultdict(list)
    links = MemorySource.objects.filter(memory_id__in=queryset.values("id")).values_list(
        "memory_id", "message_id"
    )
    for memory_id, message_id in links:
        sources[str(memory_id)].append(str(message_id))
    return [row_to_domain(row, username, sources) for row in rows]


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
    where = (
        f"{reader.name(MemoryRecord, 'user')} = %s AND {reader.name(MemoryRecord, 'scope_id')} "
        f"IN ({', '.join(['%s'] * len(scope_ids))})"
    )
    params: list = [ctx.user.pk, *scope_ids]
    if keys:
        where += f" AND {reader.name(MemoryRecord, 'key')} IN ({', '.join(['%s'] * len(keys))})"
        params += keys
    return read_records(reader, where, params, ctx.user.username)


def tombstones_of(user, keys: Iterable[str] | None = None) -> list[DomainTombstone]:
    qs = Tombstone.objects.filter(user=user)
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return [
        DomainTombstone(
            id=str(t[0]),
            user=user.username,
            scope_id=t[1],
            key=t[2],
            value_hash=t[3],
            forgotten_at=t[4],
            blocks_sources_before=t[5],
        )
        for t in qs.values_list(
            "id", "scope_id", "key", "value_hash", "forgotten_at", "blocks_sources_before"
        )
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


def memory_version_of(user_id) -> int | None:
    """The user's memory version (`memory.triggers`), or None before any memory write."""
    return MemoryVersion.objects.filter(user_id=user_id).values_list("version", flat=True).first()


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
    return bool(scope_id) and scope_id.split(":", 1)[0] in (
        "user",
        "character",
        "conversation",
        "scene",
    )


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
    tombstones, retractions, many = storage.read_write_state(reader, user, records, keys, scope_ids)
    return WriteState(records, tombstones, retractions, many)


def _write_state_orm(user, slots, keys, scope_ids, records) -> WriteState:
    from django.db.models import Max

    qs = MemoryRecord.objects.filter(user=user, key__in=keys, scope_id__in=scope_ids)
    for record in records_to_domain(qs, user.username):
        found = records.get((record.scope_id, record.key))
        if found is not None:
            found.append(record)
    retractions = {
        (scope_id, key, hashed or ""): at
        for scope_id, key, hashed, at in SlotRetraction.objects.filter(user=user, key__in=keys)
        .values("scope_id", "key", "value_hash")
        .annotate(at=Max("retracted_at"))
        .values_list("scope_id", "key", "value_hash", "at")
    }
    return WriteState(records, tombstones_of(user, keys), retractions, registry(keys).many_keys)


def registry_tombstones_secret(user, keys) -> tuple[Registry, list[DomainTombstone], bytes]:
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
    tombstones, secret = storage.read_tombstones_and_secret(reader, user, keys)
    # In a request the registry comes from the process cache (config.catalog).
    keyed = catalog_registry() if catalog.active() else Registry(storage.read_registry(reader))
    return keyed, tombstones, secret


class ContextResolution:
    """Everything one resolve needs and produces, for one context (SPEC §3, §5)."""

    def __init__(self, ctx, keys=None):
        self.ctx = ctx
        cfg = settings.COMPANION
        # Every object built here is kept until the request ends (see gc_paused).
        with gc_paused():
            remembered = remembered_now(ctx.user, context=ctx, keys=keys)
            self.records, self.registry = remembered.records, remembered.registry
            self.tombstones = remembered.tombstones
            self.resolution = remembered.resolutions[None]
            self.projection = remembered.projection or project(
                self.resolution.active,
                labels=self.registry.labels,
                many_keys=self.registry.many_keys,
                likely=cfg["CERTAINTY_LIKELY"],
                uncertain=cfg["CERTAINTY_UNCERTAIN"],
            )
        metrics.resolve_observed(len(self.records))  # SPEC §12 O3

    def log_line(self) -> str:
        return resolve_log_line(
            self.ctx.user.pk, len(self.records), self.resolution, self.projection
        )


def resolve_log_line(user_id, n_candidates: int, resolution: Resolution, projection) -> str:
    """SPEC §12: a resolve's ids, counts, reasons and versions — never a value."""
    counts: dict[str, int] = {}
    for e in resolution.excluded:
        counts[e.reason] = counts.get(e.reason, 0) + 1
    for e in projection.excluded:
        counts["prompt_" + e.reason] = counts.get("prompt_" + e.reason, 0) + 1
    parts = [
        f"user_id={user_id}",
        f"memory_candidates={n_candidates}",
        f"memory_active={len(resolution.active)}",
        f"memory_prompt={len(projection.prompt)}",
    ]
    parts += [f"excluded_{k.replace('-', '_')}={v}" for k, v in sorted(counts.items())]
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
    projection: object = None  # for one context, when the read made it (P1–P4)
    secret: bytes = b""  # the user's secret, for value-level tombstones (F1)

    @functools.cached_property
    def states(self) -> dict[str, RecordState]:
        """E1: the state of every record read, at `now`, by id (the resolver's pass with each
        record's own scope as the context; every record of a read scoped key is read)."""
        return record_states(
            self.records,
            self.tombstones,
            self.now,
            many_keys=self.registry.many_keys,
            secret=self.secret,
        )

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
    keys = list(keys) if keys else None
    if context is not None:
        domain = context.domain
        if domain.now.tzinfo is not UTC and domain.now.utcoffset() is not None:
            # The resolver compares `now` with every record's times: in the records' own tzinfo
            # (UTC) each comparison is a plain one, in an equal but different tzinfo object (a
            # parsed `now` carries ZoneInfo("UTC")) each costs two utcoffset() calls.
            domain = dataclasses.replace(domain, now=domain.now.astimezone(UTC))
        if not keys:
            found = _context_remembered(user, context, domain)
            if found is not None:
                return found
        records = candidate_records(context, keys)
        contexts = {None: domain}
        now = domain.now
    else:
        if now is None:
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
                    user=user.username,
                    character=scope.character,
                    conversation=scope.conversation,
                    scene=scope.scene,
                    now=now,
                )
    keyed, tombstones, secret = registry_tombstones_secret(user, keys)
    if context is not None:
        resolutions = {
            None: resolve(
                records, tombstones, contexts[None], many_keys=keyed.many_keys, secret=secret
            )
        }
    else:
        by_scope: dict[str, list[DomainRecord]] = defaultdict(list)
        for record in records:
            by_scope[record.scope_id].append(record)
        resolutions = {
            scope_id: resolve(
                by_scope[scope_id],
                tombstones,
                contexts[scope_id],
                many_keys=keyed.many_keys,
                secret=secret,
            )
            for scope_id in sorted(by_scope)
        }
    return Remembered(records, keyed, tombstones, resolutions, now, secret=secret)


def _context_remembered(user, context, domain) -> Remembered | None:
    """A context's whole memory as the resolver keeps it, in one statement, reusing what this
    process last read of it (`memory.storage.MEMORY_CACHE`): the state is read only when the
    user's memory version (`memory.triggers`) is another than the one it was read at, and
    the resolution is reused while `now` stays in its stable window (R3, R5) under the same
    registry and secret. None where the raw reader does not serve the database."""
    reader = raw_reader(MemoryRecord.objects.db)
    if reader is None:
        return None
    scope_ids = context_scope_ids(context)
    cached = MEMORY_CACHE.get(user.pk, scope_ids)
    parts, params = storage.context_state_parts(
        reader, user, scope_ids, cached.version if cached else None
    )
    secret_sql = (
        f"(SELECT {reader.name(MemoryProfile, 'secret')} "
        f"FROM {reader.table(MemoryProfile)} "
        f"WHERE {reader.name(MemoryProfile, 'user')} = %s)"
    )
    [row] = reader.fetch("SELECT " + ", ".join([*parts, secret_sql]), [*params, user.pk])
    version, records, tombstones, retractions, secret_hex = row
    secret_hex = secret_hex or ""
    if records is None:
        state = cached.state
        MEMORY_CACHE.note_reuse()
    else:
        state = storage.parse_context_state(records, tombstones, retractions, user.username)
    keyed = catalog_registry() if catalog.active() else Registry(storage.read_registry(reader))
    secret = bytes.fromhex(secret_hex) if secret_hex else b""
    now = domain.now
    earlier = cached.resolved_for(state, keyed, secret_hex) if cached is not None else None
    cfg = settings.COMPANION
    resolution, projection = resolve_context(
        state.records,
        state.tombstones,
        domain,
        many_keys=keyed.many_keys,
        labels=keyed.labels,
        secret=secret,
        likely=cfg["CERTAINTY_LIKELY"],
        uncertain=cfg["CERTAINTY_UNCERTAIN"],
        earlier=earlier,
    )
    if version is not None:
        MEMORY_CACHE.put(
            user.pk,
            scope_ids,
            CachedMemory(
                version,
                state,
                secret_hex,
                resolved=(keyed, Resolved.made(state.records, now, resolution, projection)),
            ),
        )
    return Remembered(
        state.records,
        keyed,
        state.tombstones,
        {None: resolution},
        now,
        projection=projection,
        secret=secret,
    )


@dataclasses.dataclass(frozen=True)
class SlotHistory:
    """W11 for one scoped key: every record in history order, with its effective end, and the
    resolver's answer at `now` for the same records."""

    records: list[DomainRecord]  # in history order (valid_from, version, id)
    ends: dict[str, datetime | None]
    remembered: Remembered
    many: bool
    label: str
    states: dict[str, RecordState] = dataclasses.field(default_factory=dict)  # E1, by id

    @property
    def current(self) -> set[str]:
        return {r.id for r in self.remembered.active}


def slot_history(user, *, key: str, scope_id: str, now: datetime | None = None) -> SlotHistory:
    """History of one scoped key (W11) for the pages: what `/memory/history` lists, plus which
    record is current now (R1–R6, with the tombstones of that key)."""
    if now is None:
        now = db_now()
    records = history_records(user, key, scope_id)
    keyed, tombstones, secret = registry_tombstones_secret(user, [key])
    many = keyed.is_many(key)
    resolutions = {}
    if records:
        scope = records[0].scope
        context = Context(
            user=user.username,
            character=scope.character,
            conversation=scope.conversation,
            scene=scope.scene,
            now=now,
        )
        resolutions[scope_id] = resolve(
            records, tombstones, context, many_keys=keyed.many_keys, secret=secret
        )
    remembered = Remembered(records, keyed, tombstones, resolutions, now)
    states = record_states(records, tombstones, now, many_keys=keyed.many_keys, secret=secret)
    return SlotHistory(
        history_order(records),
        effective_ends(records, many=many),
        remembered,
        many,
        keyed.label(key),
        states,
    )
