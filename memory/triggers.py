"""The triggers that keep `MemoryVersion` and stamp what changed (what a resolution reads, read
once per request and caught up while it holds; docs/DESIGN.md, "Memory owns the turn's
state"). Every statement that inserts, updates or deletes rows of a memory table gives each
user it touched a new version, whoever writes — a service, the admin, an import, raw SQL;
and every record, tombstone or retraction it inserts or updates carries, in
`changed_version`, a version no state read before the change can hold. Versions only grow,
on both databases:

- **PostgreSQL**: from the sequence `memory_version_seq`. A BEFORE ROW trigger first takes the
  user's version row (an upsert that changes nothing; once per transaction and user, noted in
  a transaction-local setting) and only then draws the row's stamp from the sequence; one
  statement-level AFTER trigger per table and event (transition tables: one upsert per
  statement, not per row) then draws the user's version. Why taking the row first makes it
  safe: sequence values are drawn before commit, so a transaction committing later could
  otherwise stamp a row lower than a version another one already committed. Every writer of
  a user's memory holds that user's version row from before its first stamp to its commit,
  so the stamps of one user are drawn in commit order: a state read at version V (read in
  one snapshot with the version) holds every committed change stamped at or below V, and a
  change committed after it is stamped above V.
- **SQLite**: one counter row (`memory_versioncounter`), counted up by row-level triggers; a
  write transaction holds the whole database, so its order is the commit order.

What a stamp cannot say — a row deleted, a record or retraction moved to another user or
scope, a source link dropped, a version row started afresh (a first write, or after a
TRUNCATE, which forgets every version) — sets the user's `removed_version` to the version
of that change: a state kept at an older version is read again whole. A source link added
to a record touches the record, so the record is stamped. Imports nothing of the project:
migrations use it."""

from __future__ import annotations

from collections.abc import Callable

from config.catalog import SQLOperation

VERSION_TABLE = "memory_memoryversion"
COUNTER_TABLE = "memory_versioncounter"  # SQLite only
SEQUENCE = "memory_version_seq"  # PostgreSQL only
RECORDS = "memory_memoryrecord"
SOURCES = "memory_memorysource"
# The tables whose rows a resolution reads, and the column that names a row's scope (None:
# the user's rows are read whatever their scope). Source links name their user through
# their record.
STAMPED = {
    "memory_memoryrecord": "scope_id",
    "memory_tombstone": None,
    "memory_slotretraction": "scope_id",
}
TABLES = (*STAMPED, SOURCES)
# SQLite: the columns whose update is a change (every column but the stamp, which the
# triggers' own updates set alone; tests/memory/core/test_catch_up_storage.py checks the lists
# against the models).
SQLITE_CHANGED_COLUMNS = {
    "memory_memoryrecord": (
        "id user_id key value scope_kind character_id conversation_id scene scope_id status "
        "status_since authority confidence valid_from valid_until recorded_at evidence_time "
        "supersedes_id retracted_at version told_by_connection told_by_name"
    ).split(),
    "memory_tombstone": (
        "id user_id scope_id key value_hash forgotten_at blocks_sources_before forgotten_by"
    ).split(),
    "memory_slotretraction": "id user_id scope_id key value_hash retracted_at".split(),
}
# A retraction is kept as the latest time per slot, which an update may lower: its updates are
# removals.
_UPDATE_REMOVES = frozenset({"memory_slotretraction"})
_EVENTS = {"INSERT": "NEW", "UPDATE": "NEW", "DELETE": "OLD"}

# ---------------------------------------------------------------------------------------------
# PostgreSQL


def _pg_bump(users: str, removed: bool) -> str:
    """A new version for each user of `users` (a query of one column `u`); a version row
    started afresh marks a removal, and so does `removed`."""
    statement = f"""
    INSERT INTO {VERSION_TABLE} (user_id, version, removed_version)
    SELECT u, n, n FROM (SELECT u, nextval('{SEQUENCE}') AS n
                         FROM ({users}) AS changed(u) WHERE u IS NOT NULL) AS fresh
    ON CONFLICT (user_id) DO UPDATE SET version = nextval('{SEQUENCE}');"""
    if removed:
        statement += f"""
    UPDATE {VERSION_TABLE} SET removed_version = version
    WHERE user_id IN (SELECT u FROM ({users}) AS changed(u));"""
    return statement


def _pg_statement_function(table: str, event: str) -> str:
    name = f"{table}_memory_{event.lower()}"
    if table == SOURCES:
        users = (
            "SELECT DISTINCT r.user_id FROM {rows} c "
            "JOIN memory_memoryrecord r ON r.id = c.memory_id"
        )
        if event == "INSERT":  # the records gain a source: they are stamped (and versioned)
            body = (
                f"UPDATE {RECORDS} SET changed_version = 0 "
                "WHERE id IN (SELECT memory_id FROM changed_rows);"
            )
        else:
            body = _pg_bump(users.format(rows="changed_rows"), removed=True)
            if event == "UPDATE":
                body += _pg_bump(users.format(rows="old_rows"), removed=True)
    else:
        users = "SELECT DISTINCT c.user_id FROM changed_rows c"
        body = _pg_bump(
            users, removed=event == "DELETE" or (event == "UPDATE" and table in _UPDATE_REMOVES)
        )
        scope = STAMPED[table]
        if event == "UPDATE" and table in _UPDATE_REMOVES:
            body += _pg_bump("SELECT DISTINCT o.user_id FROM old_rows o", removed=True)
        elif event == "UPDATE":
            moved = f"OR o.{scope} IS DISTINCT FROM c.{scope}" if scope else ""
            body += _pg_bump(
                "SELECT DISTINCT o.user_id FROM old_rows o JOIN changed_rows c ON c.id = o.id "
                f"WHERE o.user_id IS DISTINCT FROM c.user_id {moved}",
                removed=True,
            )
    return f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {body}
    RETURN NULL;
END
$$"""


_PG_STAMP = f"""
CREATE OR REPLACE FUNCTION memory_changed_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held text := 'companion.memory_version_held_' || NEW.user_id;
BEGIN
    IF current_setting(held, true) IS DISTINCT FROM '1' THEN
        INSERT INTO {VERSION_TABLE} (user_id, version, removed_version)
        SELECT NEW.user_id, n, n FROM (SELECT nextval('{SEQUENCE}') AS n) AS fresh
        ON CONFLICT (user_id) DO UPDATE SET version = {VERSION_TABLE}.version;
        PERFORM set_config(held, '1', true);
    END IF;
    NEW.changed_version := nextval('{SEQUENCE}');
    RETURN NEW;
END
$$"""

_PG_FORGET_ALL = f"""
CREATE OR REPLACE FUNCTION memory_versions_forgotten() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {VERSION_TABLE};
    RETURN NULL;
END
$$"""


def _pg_create() -> list[str]:
    statements = [f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}", _PG_FORGET_ALL, _PG_STAMP]
    for table in TABLES:
        for event, row in _EVENTS.items():
            statements.append(_pg_statement_function(table, event))
            tables = f"{row} TABLE AS changed_rows"
            if event == "UPDATE":
                tables += " OLD TABLE AS old_rows"
            statements.append(
                f"CREATE TRIGGER {table}_version_{event.lower()} AFTER {event} ON {table} "
                f"REFERENCING {tables} FOR EACH STATEMENT "
                f"EXECUTE FUNCTION {table}_memory_{event.lower()}()"
            )
        if table in STAMPED:
            statements.append(
                f"CREATE TRIGGER {table}_version_stamp BEFORE INSERT OR UPDATE ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION memory_changed_stamp()"
            )
        statements.append(
            f"CREATE TRIGGER {table}_version_truncate AFTER TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION memory_versions_forgotten()"
        )
    return statements


# ---------------------------------------------------------------------------------------------
# SQLite


def _sqlite_bump(user: str, removed: bool) -> str:
    """The counter counted up and the user's version set to it (not an upsert: a statement
    with its own conflict clause, bulk_create's INSERT OR IGNORE, would impose it on the
    trigger's statements); a version row started afresh marks a removal."""
    counter = f"(SELECT value FROM {COUNTER_TABLE} WHERE id = 1)"
    also = f", removed_version = {counter}" if removed else ""
    return (
        f"UPDATE {COUNTER_TABLE} SET value = value + 1 WHERE id = 1; "
        f"UPDATE {VERSION_TABLE} SET version = {counter}{also} WHERE user_id = {user}; "
        f"INSERT INTO {VERSION_TABLE} (user_id, version, removed_version) "
        f"SELECT {user}, {counter}, {counter} WHERE {user} IS NOT NULL AND NOT EXISTS "
        f"(SELECT 1 FROM {VERSION_TABLE} WHERE user_id = {user}); "
    )


def _sqlite_body(table: str, event: str) -> str:
    counter = f"(SELECT value FROM {COUNTER_TABLE} WHERE id = 1)"
    if table == SOURCES:
        if event == "INSERT":  # an update of a changed column, so the record is stamped
            return f"UPDATE {RECORDS} SET user_id = user_id WHERE id = NEW.memory_id; "
        user = "(SELECT user_id FROM memory_memoryrecord WHERE id = {}.memory_id)"
        body = _sqlite_bump(user.format("OLD"), removed=True)
        if event == "UPDATE":
            body += _sqlite_bump(user.format("NEW"), removed=True)
        return body
    if event == "DELETE" or (event == "UPDATE" and table in _UPDATE_REMOVES):
        body = _sqlite_bump("OLD.user_id", removed=True)
        if event == "DELETE":
            return body
        return body + _sqlite_bump("NEW.user_id", removed=True)
    body = _sqlite_bump("NEW.user_id", removed=False)
    # An update of the stamp alone runs no trigger (`SQLITE_CHANGED_COLUMNS`).
    body += f"UPDATE {table} SET changed_version = {counter} WHERE rowid = NEW.rowid; "
    if event == "UPDATE":
        scope = STAMPED[table]
        moved = "OLD.user_id IS NOT NEW.user_id" + (
            f" OR OLD.{scope} IS NOT NEW.{scope}" if scope else ""
        )
        # A row moved away: its old user reads the state again whole.
        body += (
            f"UPDATE {COUNTER_TABLE} SET value = value + 1 WHERE id = 1 AND ({moved}); "
            f"UPDATE {VERSION_TABLE} SET version = {counter}, removed_version = {counter} "
            f"WHERE user_id = OLD.user_id AND ({moved}); "
        )
    return body


def _sqlite_create() -> list[str]:
    statements = [
        f"CREATE TABLE IF NOT EXISTS {COUNTER_TABLE} "
        "(id integer NOT NULL PRIMARY KEY CHECK (id = 1), value integer NOT NULL)",
        f"INSERT OR IGNORE INTO {COUNTER_TABLE} (id, value) VALUES (1, 0)",
    ]
    for table in TABLES:
        for event in _EVENTS:
            columns = SQLITE_CHANGED_COLUMNS.get(table) if event == "UPDATE" else None
            of = f" OF {', '.join(columns)}" if columns else ""
            statements.append(
                f"CREATE TRIGGER {table}_version_{event.lower()} AFTER {event}{of} ON {table} "
                f"FOR EACH ROW BEGIN {_sqlite_body(table, event)}END"
            )
    return statements


def create_sql(vendor: str) -> list[str]:
    if vendor == "postgresql":
        return _pg_create()
    if vendor == "sqlite":
        return _sqlite_create()
    raise NotImplementedError(f"Memory version triggers for {vendor} are not written yet.")


def drop_sql(vendor: str) -> list[str]:
    """Every trigger and function this module writes, and those of its earlier form (one
    statement-level function per table, `<table>_memory_changed`). The sequence and the
    counter stay: a version once drawn is never drawn again."""
    if vendor == "postgresql":
        statements = [
            f"DROP TRIGGER IF EXISTS {table}_version_{event} ON {table}"
            for table in TABLES
            for event in ("insert", "update", "delete", "truncate", "stamp")
        ]
        statements += [f"DROP FUNCTION IF EXISTS {table}_memory_changed()" for table in TABLES]
        statements += [
            f"DROP FUNCTION IF EXISTS {table}_memory_{event.lower()}()"
            for table in TABLES
            for event in _EVENTS
        ]
        return statements + [
            "DROP FUNCTION IF EXISTS memory_changed_stamp()",
            "DROP FUNCTION IF EXISTS memory_versions_forgotten()",
        ]
    return [
        f"DROP TRIGGER IF EXISTS {table}_version_{event}"
        for table in TABLES
        for event in ("insert", "update", "delete")
    ]


class _TriggerSet(SQLOperation):
    """One set of this module's triggers as a migration operation: `made(vendor)` writes the
    statements that create them, `dropped(vendor)` those that drop them; a `dropping` operation
    (a subclass that says only `dropping = True`) runs them the other way round (drops
    forwards, creates again backwards). `triggers` names the set, `description` says what making
    it does."""

    made: Callable[[str], list[str]]
    dropped: Callable[[str], list[str]]
    dropping = False
    triggers = ""
    description = ""

    def create_sql(self, vendor: str) -> list[str]:
        return (self.dropped if self.dropping else self.made)(vendor)

    def drop_sql(self, vendor: str) -> list[str]:
        return (self.made if self.dropping else self.dropped)(vendor)

    def describe(self):
        return f"Drop the {self.triggers}" if self.dropping else self.description

    @property
    def migration_name_fragment(self):
        return ("drop_" if self.dropping else "") + self.triggers.replace(" ", "_")


class MemoryVersionTriggers(_TriggerSet):
    """The memory version's triggers on every memory table (and PostgreSQL's functions)."""

    made, dropped = staticmethod(create_sql), staticmethod(drop_sql)
    triggers = "memory version triggers"
    description = "Memory version triggers on the memory tables"


class DropMemoryVersionTriggers(MemoryVersionTriggers):
    """The memory version's triggers dropped (before a change of the tables they are on)."""

    dropping = True


# ---------------------------------------------------------------------------------------------
# Memory links (F7.2)

LINKS = "memory_memorywithholding"
# Each event with the rows whose records it stamps.
_LINK_EVENTS = (("INSERT", ("NEW",)), ("DELETE", ("OLD",)), ("UPDATE", ("NEW", "OLD")))


def link_create_sql(vendor: str) -> list[str]:
    """A memory link (F7.2) written, changed or deleted stamps the records it names, so a state
    held at an older version re-reads them with their links: on PostgreSQL an update of the
    records that the stamp trigger stamps, on SQLite an update of a changed column."""
    if vendor == "postgresql":
        statements = []
        for upper, rows in _LINK_EVENTS:
            event = upper.lower()
            tables = " ".join(f"{r} TABLE AS {r.lower()}_rows" for r in rows)
            touched = " UNION ".join(f"SELECT memory_id FROM {r.lower()}_rows" for r in rows)
            statements += [
                f"""
CREATE OR REPLACE FUNCTION {LINKS}_{event}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {RECORDS} SET changed_version = 0 WHERE id IN ({touched});
    RETURN NULL;
END
$$""",
                f"CREATE TRIGGER {LINKS}_stamp_{event} AFTER {event.upper()} ON {LINKS} "
                f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION {LINKS}_{event}()",
            ]
        return statements
    if vendor == "sqlite":
        touch = f"UPDATE {RECORDS} SET user_id = user_id WHERE id = {{}}.memory_id; "
        return [
            f"CREATE TRIGGER {LINKS}_stamp_{event.lower()} AFTER {event} ON {LINKS} "
            f"FOR EACH ROW BEGIN {''.join(touch.format(r) for r in rows)}END"
            for event, rows in _LINK_EVENTS
        ]
    raise NotImplementedError(f"Memory link triggers for {vendor} are not written yet.")


def link_drop_sql(vendor: str) -> list[str]:
    events = ("insert", "delete", "update")
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {LINKS}_stamp_{e} ON {LINKS}" for e in events] + [
            f"DROP FUNCTION IF EXISTS {LINKS}_{e}()" for e in events
        ]
    return [f"DROP TRIGGER IF EXISTS {LINKS}_stamp_{e}" for e in events]


class MemoryLinkTriggers(_TriggerSet):
    """The triggers that stamp a record when a memory link naming it changes (F7.2)."""

    made, dropped = staticmethod(link_create_sql), staticmethod(link_drop_sql)
    triggers = "memory link triggers"
    description = "Memory link triggers stamping the records they name"


class DropMemoryLinkTriggers(MemoryLinkTriggers):
    """The memory links' triggers dropped (before a change of the record table they stamp)."""

    dropping = True
