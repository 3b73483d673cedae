"""Catalog data cached per process, with an invalidation every worker sees (DESIGN, storage).

Catalog data — the key registry, capabilities, product-default rules, characters — is read by
nearly every request and changes rarely. Each app's selectors own its loaders and wrap them in
`cached`; this module is the generic plumbing and imports no app.

**Mechanism: a version row set by database triggers.** `config.CatalogVersion` holds one row;
triggers on every catalog table (created by each owning app's migrations with
`CatalogTriggers`) give it a new random value in the same transaction as any change. Triggers
rather than Django signals because the catalog also changes without signals: `queryset.update()`,
`bulk_create`, raw SQL, data migrations, an operator in `psql`, another machine. The value is
random, not a counter, and compared only for equality: a rolled-back change or a flushed table
cannot bring back a value some process still holds, as a counter's would.

**Freshness costs at most one statement per request.** A token check that reads the database
(`config.credentials`) reads the version in the same query (a subquery), so that API request
knows the catalog's version as of its start; a request whose token the process remembers reads
it lazily like a page, the first time it uses catalog data. A process whose cached data carries
another version loads it again (one query per loader).
Pages and the admin (session auth, no token) read the version lazily, once per request, the
first time they use catalog data. Outside a request (services called from a management
command, a thread, a test) nothing is cached: every read goes to the database as it always did.

A request sees the catalog as of its start: a change it makes itself is seen from the next
request on (no request today writes catalog data and then reads it back).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.db import models
from django.db.migrations.operations.base import Operation

T = TypeVar("T")

_UNREAD = object()  # a request that has not read the version yet
_UNCACHED = object()  # no request, or no version row: read the database every time

_scope: contextvars.ContextVar[Any] = contextvars.ContextVar("catalog_version", default=_UNCACHED)


def version_subquery() -> models.Subquery:
    """The catalog version as a subquery, to annotate a query the request runs anyway."""
    from config.models import CatalogVersion

    return models.Subquery(CatalogVersion.objects.filter(pk=1).values("version")[:1])


_version_sql: dict[str, str] = {}  # the version's SELECT by database alias, built once


def _read_version():
    """The version row's value (`_UNCACHED` without one), by a statement built once per
    process: it runs on every request whose token the process remembers."""
    from django.db import connections, router

    from config.models import CatalogVersion

    alias = router.db_for_read(CatalogVersion)
    connection = connections[alias]
    sql = _version_sql.get(alias)
    if sql is None:
        quote, meta = connection.ops.quote_name, CatalogVersion._meta
        sql = _version_sql[alias] = (
            f"SELECT {quote(meta.get_field('version').column)} FROM {quote(meta.db_table)} "
            f"WHERE {quote(meta.pk.column)} = 1"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        row = cursor.fetchone()
    return _UNCACHED if row is None else row[0]


def note_version(version) -> None:
    """The version the request's token check read with the token (None: no version row)."""
    if _scope.get() is not _UNCACHED:
        _scope.set(_UNCACHED if version is None else version)


def current_version():
    """The request's catalog version (read once if nobody brought it), or `_UNCACHED`."""
    version = _scope.get()
    if version is _UNREAD:
        version = _read_version()
        _scope.set(version)
    return version


def active() -> bool:
    """Whether catalog reads may use the process cache now (in a request, with a version)."""
    return current_version() is not _UNCACHED


class CatalogMiddleware:
    """Opens a request's catalog scope: the version is unknown until the token check brings it
    or the first catalog read asks for it; it is forgotten when the response is made."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _scope.set(_UNREAD)
        try:
            return self.get_response(request)
        finally:
            _scope.reset(token)


_caches: list[Cached] = []


class Cached(Generic[T]):
    """One loader's data, kept with the catalog version it was loaded under. The version is
    read before the data, so data is never labelled newer than it is; at worst a change made
    in between makes the next request load once more."""

    def __init__(self, loader: Callable[[], T]):
        self.loader = loader
        self._held: tuple[Any, T] | None = None
        self._lock = threading.Lock()
        _caches.append(self)

    def get(self) -> T:
        version = current_version()
        if version is _UNCACHED:
            return self.loader()
        held = self._held
        if held is not None and held[0] == version:
            return held[1]
        value = self.loader()
        with self._lock:
            self._held = (version, value)
        return value

    def warm(self) -> bool:
        """Whether `get()` answers without loading: in a request, held at its version."""
        version = current_version()
        held = self._held
        return version is not _UNCACHED and held is not None and held[0] == version

    def put(self, value: T) -> T:
        """`value`, which the caller read as the loader would (in a statement after the
        request's version was read), kept as that version's; outside a request only
        returned."""
        version = current_version()
        if version is not _UNCACHED:
            with self._lock:
                self._held = (version, value)
        return value

    def clear(self) -> None:
        self._held = None

    __call__ = get


def cached(loader: Callable[[], T]) -> Cached[T]:
    """Decorator: `loader()` (no arguments, catalog data only) cached per process."""
    return Cached(loader)


def clear_all() -> None:
    """Drop every process cache (tests start each case cold)."""
    for cache in _caches:
        cache.clear()


# ---------------------------------------------------------------------------------------------
# The triggers. A migration of the app owning a catalog table adds `CatalogTriggers(table)`;
# config's migration creates the version row and, on PostgreSQL, the trigger function.

_VERSION_TABLE = "config_catalogversion"

PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION config_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {_VERSION_TABLE} (id, version)
    VALUES (1, floor(random() * 9007199254740991)::bigint)
    ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END
$$
"""
PG_FUNCTION_DROP = "DROP FUNCTION IF EXISTS config_catalog_changed()"

# SQLite has no functions: each trigger carries the statements. Not an upsert: a statement
# that fired the trigger with its own conflict clause (`INSERT OR IGNORE` of bulk_create) would
# impose it on the trigger's statements.
_SQLITE_BODY = (
    f"UPDATE {_VERSION_TABLE} SET version = random() WHERE id = 1; "
    f"INSERT INTO {_VERSION_TABLE} (id, version) SELECT 1, random() "
    f"WHERE NOT EXISTS (SELECT 1 FROM {_VERSION_TABLE} WHERE id = 1);"
)

_EVENTS = ("INSERT", "UPDATE", "DELETE")


class SQLOperation(Operation):
    """A migration operation that is only SQL, per database vendor: `create_sql(vendor)` runs
    forwards, `drop_sql(vendor)` backwards; the migration state does not change. Triggers and
    trigger functions (here and in `memory.triggers`) are written as these."""

    reduces_to_sql = True
    reversible = True

    def deconstruct(self):
        return self.__class__.__name__, [], {}

    def state_forwards(self, app_label, state):
        pass

    def create_sql(self, vendor: str) -> list[str]:
        raise NotImplementedError

    def drop_sql(self, vendor: str) -> list[str]:
        raise NotImplementedError

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        for statement in self.create_sql(schema_editor.connection.vendor):
            schema_editor.execute(statement, params=None)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        for statement in self.drop_sql(schema_editor.connection.vendor):
            schema_editor.execute(statement, params=None)


class CatalogTriggers(SQLOperation):
    """Triggers that change the catalog version on every insert, update and delete of `table`
    (and, on PostgreSQL, a truncate). `null_column`: only rows where that column is NULL are
    catalog data (a product-default rule has no user)."""

    def __init__(self, table: str, null_column: str | None = None):
        self.table = table
        self.null_column = null_column

    def deconstruct(self):
        kwargs = {"table": self.table}
        if self.null_column:
            kwargs["null_column"] = self.null_column
        return self.__class__.__name__, [], kwargs

    def _name(self, event: str) -> str:
        return f"catalog_{self.table}_{event.lower()}"

    def _when(self, event: str, *, postgres: bool) -> str:
        column = self.null_column
        if not column:
            return ""
        rows = {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}[event]
        condition = " OR ".join(f"{row}.{column} IS NULL" for row in rows)
        return f" WHEN ({condition})" if postgres else f" WHEN {condition}"

    def create_sql(self, vendor: str) -> list[str]:
        if vendor == "postgresql":
            statements = [
                f"CREATE TRIGGER {self._name(event)} AFTER {event} ON {self.table} FOR EACH ROW"
                f"{self._when(event, postgres=True)} EXECUTE FUNCTION config_catalog_changed()"
                for event in _EVENTS
            ]
            statements.append(
                f"CREATE TRIGGER {self._name('truncate')} AFTER TRUNCATE ON {self.table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION config_catalog_changed()"
            )
            return statements
        if vendor == "sqlite":
            return [
                f"CREATE TRIGGER {self._name(event)} AFTER {event} ON {self.table} FOR EACH ROW"
                f"{self._when(event, postgres=False)} BEGIN {_SQLITE_BODY} END"
                for event in _EVENTS
            ]
        raise NotImplementedError(f"Catalog triggers for {vendor} are not written yet.")

    def drop_sql(self, vendor: str) -> list[str]:
        events = _EVENTS + (("truncate",) if vendor == "postgresql" else ())
        on = f" ON {self.table}" if vendor == "postgresql" else ""
        return [f"DROP TRIGGER IF EXISTS {self._name(event)}{on}" for event in events]

    def describe(self):
        return f"Catalog version triggers on {self.table}"

    @property
    def migration_name_fragment(self):
        return f"catalog_triggers_{self.table}"


class CatalogFunction(SQLOperation):
    """PostgreSQL's trigger function (SQLite triggers carry their statements instead)."""

    def create_sql(self, vendor: str) -> list[str]:
        return [PG_FUNCTION] if vendor == "postgresql" else []

    def drop_sql(self, vendor: str) -> list[str]:
        return [PG_FUNCTION_DROP] if vendor == "postgresql" else []

    def describe(self):
        return "The catalog version's trigger function (PostgreSQL)"
