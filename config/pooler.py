"""The database settings of app servers that reach PostgreSQL through PgBouncer in transaction
pooling (`DATABASE_POOLER=pgbouncer`; docs/DECISIONS.md, "PgBouncer in transaction pooling").

In transaction pooling a client holds a server connection only for one transaction: the next
transaction of the same Django connection may run on another server backend, and the
backend it used serves other clients in between. Nothing may outlive a transaction on the
server side, so:

- no server-side cursors (`DISABLE_SERVER_SIDE_CURSORS`): outside a transaction Django opens
  them `WITH HOLD`, and their next fetch would reach a backend that has no such cursor;
- no prepared statements (psycopg's `prepare_threshold` None): psycopg prepares a statement
  after it ran five times on a connection, and a later run on another backend fails
  ("prepared statement _pg3_0 does not exist" / "already exists");
- no session state: no session `SET`, `LISTEN`, session advisory lock or temporary table
  (the code keeps none, see docs/DECISIONS.md). The one session setting Django itself makes —
  `SET TIME ZONE 'UTC'` on a new connection whose server reports another zone name — is a
  parameter PgBouncer tracks per client and restores on whichever backend serves it.

Standard library only: the settings module and the tests both apply it.
"""

from __future__ import annotations

POOLERS = ("", "pgbouncer")


def behind_pgbouncer(database: dict) -> dict:
    """`database` (one entry of DATABASES, PostgreSQL) made safe for PgBouncer's transaction
    pooling, changed in place and returned."""
    database["DISABLE_SERVER_SIDE_CURSORS"] = True
    options = database.setdefault("OPTIONS", {})
    options["prepare_threshold"] = None
    # Client-side binding (Django's default): the parameters travel inside the statement text,
    # as the statement capture and the pooler both expect. Server-side binding would not
    # prepare without a threshold either; it is pinned off so a pooled deployment runs the
    # statements the suite ran through PgBouncer.
    options["server_side_binding"] = False
    return database
