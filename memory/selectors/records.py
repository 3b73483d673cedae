"""Memory's record reads, which every other read of memory builds on (SPEC §0: every query
filters by user first): stored rows as pure-core records with their sources, tombstones, the
key registry, one record by id, the user's memory version and SPEC §8's "it". A context's
state — what the turn, the resolve endpoint, the write services and the pages read — goes
through the one door, `memory.state`, whose ORM path builds on these; turn creation and
export read them directly. A read of records is one query for records with their sources
and one for tombstones, whatever the number of records (DESIGN: constant query counts)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable

from django.core.exceptions import EmptyResultSet
from django.db.models import CharField, Value

from config import catalog
from config.errors import NotFound
from config.storage import raw_reader
from conversations.scopes import scope_of_id

from ..domain import MemoryRecord as DomainRecord
from ..domain import Tombstone as DomainTombstone
from ..domain import default_label
from ..models import (
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    MemoryVersion,
    MemoryWithholding,
    Tombstone,
)
from ..storage import (
    RECORD_FIELDS,
    TOMBSTONE_COLUMNS,
    read_records,
    read_registry,
    read_tombstones_and_secret,
    tombstones_from_rows,
)


def row_to_domain(
    row: tuple, username: str, sources: dict, withheld: dict | None = None
) -> DomainRecord:
    (
        id_,
        key,
        value,
        _kind,
        scope_id,
        _scene,
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
        told_by_connection,
        told_by_name,
    ) = row
    rid = str(id_)
    return DomainRecord(
        id=rid,
        user=username,
        key=key,
        value=value,
        scope=scope_of_id(scope_id),
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
        withheld_by=tuple(sorted(withheld.get(rid, ()))) if withheld else (),
        told_by=(told_by_connection, told_by_name) if told_by_connection else (),
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
    one query (two on the ORM path). The raw reader reads the rows the queryset selects in the
    model's order; a queryset with an order or a slice of its own is read by the ORM."""
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
    sources, withheld = links_of(queryset.values("id"))
    return [row_to_domain(row, username, sources, withheld) for row in rows]


def links_of(ids) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per record of `ids` (a query of record ids): the ids of its source messages, and the
    ids of the tombstones withholding it (F7.2), in one query."""
    sources: dict[str, list[str]] = defaultdict(list)
    withheld: dict[str, list[str]] = defaultdict(list)
    found = {"s": sources, "w": withheld}
    linked = (
        MemorySource.objects.filter(memory_id__in=ids)
        .annotate(kind=Value("s", output_field=CharField()))
        .values_list("memory_id", "message_id", "kind")
        .order_by()
    )
    held = (
        MemoryWithholding.objects.filter(memory_id__in=ids)
        .annotate(kind=Value("w", output_field=CharField()))
        .values_list("memory_id", "tombstone_id", "kind")
        .order_by()
    )
    for memory_id, other, kind in linked.union(held, all=True):
        found[kind][str(memory_id)].append(str(other))
    return sources, withheld


def tombstones_of(user, keys: Iterable[str] | None = None) -> list[DomainTombstone]:
    qs = Tombstone.objects.filter(user=user)
    if keys is not None:
        qs = qs.filter(key__in=list(keys))
    return tombstones_from_rows(qs.values_list(*TOMBSTONE_COLUMNS), user.username)


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


def registry_tombstones_secret(user, keys) -> tuple[Registry, list[DomainTombstone], bytes]:
    """`registry()`, `tombstones_of(user, keys)` and — when a tombstone holds a value hash —
    `user_secret(user)`, in two queries whatever the data (one in a request, where the
    registry is cached) (the secret comes with the
    tombstones), so a resolve's query count does not depend on what was forgotten. Written
    out once per database like the record read (same WHERE and ORDER BY as the ORM's)."""
    reader = raw_reader(Tombstone.objects.db)
    if reader is None:
        keyed = registry()
        tombstones = tombstones_of(user, keys)
        secret = user_secret(user) if any(t.value_hash for t in tombstones) else b""
        return keyed, tombstones, secret
    tombstones, secret = read_tombstones_and_secret(reader, user, keys)
    # In a request the registry comes from the process cache (config.catalog).
    keyed = catalog_registry() if catalog.active() else Registry(read_registry(reader))
    return keyed, tombstones, secret
