"""The triggers that keep `MemoryVersion` (what a resolution reads, read once per request and
reused while unchanged): every statement that inserts, updates or deletes rows of a memory
table gives each user it touched a new version — on PostgreSQL from a sequence, in one
statement-level trigger per table and event (transition tables, so a bulk write costs one
upsert per statement, not per row); on SQLite a random value, in row-level triggers. So a
version read together with a state names that state exactly, even inside a transaction that
writes again later. A TRUNCATE forgets every version. Imports nothing of the project:
migrations use it."""

from __future__ import annotations

from config.catalog import SQLOperation

VERSION_TABLE = "memory_memoryversion"
# The tables whose rows a resolution reads, and how a changed row names its user.
TABLES = {
    "memory_memoryrecord": "user_id",
    "memory_tombstone": "user_id",
    "memory_slotretraction": "user_id",
    "memory_memorysource": None,  # through its memory record
}
_EVENTS = {"INSERT": "NEW", "UPDATE": "NEW", "DELETE": "OLD"}


def _pg_function(table: str) -> str:
    column = TABLES[table]
    users = (
        f"SELECT DISTINCT c.{column} FROM changed_rows c"
        if column
        else "SELECT DISTINCT r.user_id FROM changed_rows c "
        "JOIN memory_memoryrecord r ON r.id = c.memory_id"
    )
    return f"""
CREATE OR REPLACE FUNCTION {table}_memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {VERSION_TABLE} (user_id, version)
    SELECT u, nextval('memory_version_seq') FROM ({users}) AS changed(u) WHERE u IS NOT NULL
    ON CONFLICT (user_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END
$$"""


_PG_FORGET_ALL = f"""
CREATE OR REPLACE FUNCTION memory_versions_forgotten() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {VERSION_TABLE};
    RETURN NULL;
END
$$"""


def _sqlite_body(table: str, row: str) -> str:
    column = TABLES[table]
    user = (
        f"{row}.{column}"
        if column
        else f"(SELECT user_id FROM memory_memoryrecord WHERE id = {row}.memory_id)"
    )
    # Not an upsert: a statement with its own conflict clause (bulk_create's INSERT OR
    # IGNORE) would impose it on the trigger's statements.
    return (
        f"UPDATE {VERSION_TABLE} SET version = random() WHERE user_id = {user}; "
        f"INSERT INTO {VERSION_TABLE} (user_id, version) SELECT {user}, random() "
        f"WHERE {user} IS NOT NULL AND NOT EXISTS "
        f"(SELECT 1 FROM {VERSION_TABLE} WHERE user_id = {user});"
    )


def create_sql(vendor: str) -> list[str]:
    statements = []
    if vendor == "postgresql":
        statements.append("CREATE SEQUENCE IF NOT EXISTS memory_version_seq")
        statements.append(_PG_FORGET_ALL)
        for table in TABLES:
            statements.append(_pg_function(table))
            for event, row in _EVENTS.items():
                statements.append(
                    f"CREATE TRIGGER {table}_version_{event.lower()} AFTER {event} ON {table} "
                    f"REFERENCING {row} TABLE AS changed_rows FOR EACH STATEMENT "
                    f"EXECUTE FUNCTION {table}_memory_changed()"
                )
            statements.append(
                f"CREATE TRIGGER {table}_version_truncate AFTER TRUNCATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION memory_versions_forgotten()"
            )
        return statements
    if vendor == "sqlite":
        return [
            f"CREATE TRIGGER {table}_version_{event.lower()} AFTER {event} ON {table} "
            f"FOR EACH ROW BEGIN {_sqlite_body(table, row)} END"
            for table in TABLES
            for event, row in _EVENTS.items()
        ]
    raise NotImplementedError(f"Memory version triggers for {vendor} are not written yet.")


def drop_sql(vendor: str) -> list[str]:
    if vendor == "postgresql":
        statements = [
            f"DROP TRIGGER IF EXISTS {table}_version_{event} ON {table}"
            for table in TABLES
            for event in ("insert", "update", "delete", "truncate")
        ]
        statements += [f"DROP FUNCTION IF EXISTS {table}_memory_changed()" for table in TABLES]
        return statements + [
            "DROP FUNCTION IF EXISTS memory_versions_forgotten()",
            "DROP SEQUENCE IF EXISTS memory_version_seq",
        ]
    return [
        f"DROP TRIGGER IF EXISTS {table}_version_{event}"
        for table in TABLES
        for event in ("insert", "update", "delete")
    ]


class MemoryVersionTriggers(SQLOperation):
    """The memory version's triggers on every memory table (and PostgreSQL's function)."""

    def create_sql(self, vendor: str) -> list[str]:
        return create_sql(vendor)

    def drop_sql(self, vendor: str) -> list[str]:
        return drop_sql(vendor)

    def describe(self):
        return "Memory version triggers on the memory tables"

    @property
    def migration_name_fragment(self):
        return "memory_version_triggers"
