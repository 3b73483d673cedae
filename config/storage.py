"""The speed devices every app's storage module builds on (docs/DESIGN.md, habit 2): a raw
reader that runs SQL with the ORM's WHERE and ORDER BY on a plain cursor and gives exactly
the ORM's values, and a row writer that sends a transaction's inserts and updates as one
statement on PostgreSQL. Each app's `storage.py` writes its statements with these; the rules
never see them.

A resolve or a plan reads every candidate row of a user. Through the ORM each field of each
row went through a Python converter (a UUID object built and printed back, each datetime made
aware) and each row through a dataclass constructor, which cost several times more than
resolving the rows. The raw reader has the database print UUIDs and datetimes as text, and
the rows are built column by column, giving exactly the values the ORM path gives
(tests/memory/test_selectors.py compares them). Only the two text templates differ between
databases; another vendor, or settings where the text could differ, takes the ORM path.

Config's own statements live here too: the database clock (`clock_timestamp`), the readiness
probe (`database_answers`) and the throttle counters' upsert (`throttle_hits_add`); and the
pause of the cyclic garbage collector a request builds its kept objects under (`gc_paused`),
a speed device of the shell, never of the pure core."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection as default_connection
from django.db import connections, router
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery, UpdateQuery


def _text_sql(alias: str) -> tuple[str, str] | None:
    """The database's SQL for (a UUID column as its canonical text, a datetime column as UTC
    text that `datetime.fromisoformat` reads into the ORM's aware UTC datetime), as templates
    over the column `{0}`; None where the ORM must read instead."""
    connection = connections[alias]
    if not settings.USE_TZ or connection.timezone is not UTC:
        return None
    if connection.vendor == "sqlite":
        # Django stores a UUID as 32 lowercase hex digits and a datetime as naive UTC text.
        return (
            "substr({0}, 1, 8) || '-' || substr({0}, 9, 4) || '-' || substr({0}, 13, 4) "
            "|| '-' || substr({0}, 17, 4) || '-' || substr({0}, 21)",
            "{0} || '+00:00'",
        )
    if connection.vendor == "postgresql":
        # Fixed-format text instead of psycopg's datetimes, which Django's Python-level
        # loader would convert one by one (most of the cost of fetching candidate rows).
        return (
            "{0}::text",
            "to_char({0} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00:00'",
        )
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
        return ", ".join(
            self.name(model, name.lstrip("-"), table)
            + (" DESC" if name.startswith("-") else " ASC")
            for name in model._meta.ordering
        )

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


class RowWriter:
    """The rows a transaction inserts (and the few it updates), written together: on
    PostgreSQL as one statement (data-modifying WITH clauses; Django's foreign keys are checked
    at commit, so the order of the rows does not matter), elsewhere one INSERT per batch of
    rows of a model (and one UPDATE each), in the order given. Rows are Django model instances
    with their primary keys set, or an auto key left to the database."""

    def __init__(self):
        self.steps: list[tuple] = []
        self.written: list = []  # callables run once the rows are written

    def then(self, done) -> None:
        """Run `done()` once `flush` has written the rows (the owner of some rows keeps what
        they left, e.g. `memory.state`)."""
        self.written.append(done)

    def insert(self, rows, *, ignore_conflicts: bool = False) -> None:
        rows = list(rows)
        if rows:
            self.steps.append(("insert", rows, ignore_conflicts))

    def update(self, model, pk, **values) -> None:
        self.steps.append(("update", model, pk, values))

    def flush(self) -> None:
        self._write()
        written, self.written = self.written, []
        for done in written:
            done()

    def _write(self) -> None:
        steps, self.steps = self.steps, []
        if not steps:
            return
        first = steps[0]
        connection = connections[
            router.db_for_write(type(first[1][0]) if first[0] == "insert" else first[1])
        ]
        if connection.vendor != "postgresql":
            for step in steps:
                if step[0] == "insert":
                    _, rows, ignore = step
                    type(rows[0]).objects.bulk_create(rows, ignore_conflicts=ignore)
                else:
                    _, model, pk, values = step
                    model.objects.filter(pk=pk).update(**values)
            return
        statements = [self._sql(step, connection) for step in steps]
        *first, (sql, params) = statements
        sql = (
            "".join(f"{'WITH' if i == 0 else ','} w{i} AS ({s}) " for i, (s, _) in enumerate(first))
            + sql
        )
        params = [p for _, found in first for p in found] + list(params)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
        for step in steps:
            if step[0] == "insert":
                for row in step[1]:
                    row._state.adding, row._state.db = False, connection.alias

    @staticmethod
    def _sql(step, connection) -> tuple[str, list]:
        if step[0] == "update":
            return _update_sql(step, connection)
        return _insert_sql(step, connection)


# The text of each statement the writer has sent, by its shape: the text depends only on the
# shape (the model, the fields or columns, the number of rows, ON CONFLICT), never on the values,
# so Django compiles it once per process and shape and each write prepares only its values, as
# Django's compiler does (`prepare_value`, `pre_save_val`; tests/config/test_row_writer.py holds
# the two equal).
_statements: dict[tuple, tuple[str, bool]] = {}


def _insert_fields(model) -> list:
    opts = model._meta
    return [
        f
        for f in opts.local_concrete_fields
        if not (f is opts.pk and f.get_internal_type() in ("AutoField", "BigAutoField"))
    ]


def _insert_sql(step, connection) -> tuple[str, list]:
    """An INSERT of `rows` as Django's compiler writes it (one VALUES row each, or PostgreSQL's
    UNNEST of one array per column), its text built once per shape."""
    _, rows, ignore = step
    model = type(rows[0])
    fields = _insert_fields(model)
    query = InsertQuery(model, on_conflict=OnConflict.IGNORE if ignore else None)
    query.insert_values(fields, rows)
    compiler = query.get_compiler(connection=connection)
    key = (connection.alias, model, ignore, len(rows))
    built = _statements.get(key)
    if built is not None:
        values = [
            [compiler.prepare_value(field, compiler.pre_save_val(field, row)) for field in fields]
            for row in rows
        ]
        # A value that compiles to SQL of its own (an expression) has its own placeholder.
        if not any(hasattr(value, "as_sql") for found in values for value in found):
            sql, unnest = built
            if unnest:
                return sql, [list(column) for column in zip(*values, strict=True)]
            return sql, [value for found in values for value in found]
    [(sql, params)] = compiler.as_sql()
    if not any(hasattr(field, "get_placeholder") for field in fields):
        _statements.setdefault(key, (sql, "UNNEST(" in sql))
    return sql, list(params)


def _update_sql(step, connection) -> tuple[str, list]:
    """An UPDATE of one row by its primary key, as Django's compiler writes it, its text built
    once per model and columns."""
    _, model, pk, values = step
    key = (connection.alias, model, "update", tuple(values))
    built = _statements.get(key)
    if built is not None:
        prepared = []
        for name, value in values.items():
            if _own_sql(value):
                break
            field = model._meta.get_field(name)
            prepared.append(field.get_db_prep_save(value, connection=connection))
        else:
            pk_field = model._meta.pk
            pk = pk_field.get_db_prep_value(pk_field.get_prep_value(pk), connection, prepared=True)
            return built[0], [*prepared, pk]
    query = UpdateQuery(model)
    query.add_update_values(values)
    query.add_filter("pk", pk)
    sql, params = query.get_compiler(connection=connection).as_sql()
    fields = [model._meta.get_field(name) for name in values]
    if not any(map(_own_sql, values.values())) and not any(
        hasattr(field, "get_placeholder") for field in fields
    ):
        _statements.setdefault(key, (sql, False))
    return sql, list(params)


def _own_sql(value) -> bool:
    """A value Django writes as SQL of its own (an expression) or through a model instance."""
    return hasattr(value, "resolve_expression") or hasattr(value, "prepare_database_save")


def json_rows(vendor: str, columns: list[str], rest: str) -> str:
    """A scalar subquery: the rows of `SELECT columns rest` as a JSON array of arrays (text)."""
    if vendor == "postgresql":
        return (
            f"(SELECT COALESCE(json_agg(json_build_array({', '.join(columns)})), '[]')::text "
            f"{rest})"
        )
    return f"(SELECT COALESCE(json_group_array(json_array({', '.join(columns)})), '[]') {rest})"


def clock_timestamp() -> datetime:
    """PostgreSQL's `clock_timestamp()` on the default database (`config.clock.db_now`)."""
    with default_connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        value = cursor.fetchone()[0]
    return value


def database_answers(connection) -> None:
    """Run the readiness probe's statement on `connection`: raises when it cannot."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def throttle_hits_add(model, rows: list[tuple[str, tuple[int, int]]]) -> dict:
    """Add each `(key, (window, hits))` of `rows` to the throttle counters' table of `model`
    in one upsert: a counter of an earlier window starts again from the hits added. Answers
    `{(key, window): hits}` as stored."""
    connection = connections[router.db_for_write(model)]
    q = connection.ops.quote_name
    table = q(model._meta.db_table)
    values = ", ".join(["(%s, %s, %s)"] * len(rows))
    params = [p for key, (window, hits) in rows for p in (key, window, hits)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({q('key')}, window_start, hits) VALUES {values} "
            f"ON CONFLICT ({q('key')}) DO UPDATE SET "
            f"hits = CASE WHEN {table}.window_start = excluded.window_start "
            f"THEN {table}.hits + excluded.hits ELSE excluded.hits END, "
            f"window_start = excluded.window_start "
            f"RETURNING {q('key')}, window_start, hits",
            params,
        )
        return {(key, window): hits for key, window, hits in cursor.fetchall()}


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while a block builds many objects that all
    stay alive until it ends (so a collection could free none of them, yet each one walks
    them all). Resumed only if this block paused it, so nesting is harmless; objects are
    still freed by reference counting meanwhile."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
