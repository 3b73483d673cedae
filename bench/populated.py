"""The populated database (`python -m bench --populated`): does one user's turn cost the same
when a thousand other users' data share the tables?

`companion_bench_pop` (BENCH_POP_DATABASE) holds `users` users with `memories` memories each
and their conversations (six per user, as the generator makes them: the first with 40
messages, five with 40 source messages; 240 messages a user), about half of their messages
answered by a turn, two boundary rules and the versions. It is built once and reused: a
marker table (`bench_populated`) records what was built; a database without the marker, or
with another spec, is dropped and built again.

The build is one generated world (`bench.data`, loaded through the ORM as the template user)
copied `users - 1` times by `INSERT … SELECT … CROSS JOIN` a `generate_series` of users, one
statement per table, with triggers and foreign-key triggers off for the copy
(`session_replication_role = replica`): every uuid column maps to `md5(old || ':' || n)`, the
user column to the copy's user, scope ids are rewritten for the copy's user and
conversations. The per-user memory versions are copied too, so the version triggers' state
is what they would have written.

Each run then loads one measured user (the same generated world as the empty database's
comparison user, under a name and ids of its own: each run adds one user), runs one warm
turn, and records `EXPLAIN (ANALYZE, BUFFERS)` of every statement of the next turn (create
with plan, reply; each statement explained in a savepoint rolled back, then run). The
worker then serves both databases with gunicorn and measures the single-client turn on
each in alternating rounds (`bench.turns.compare_single`).

This module's `main` runs in its own process (Django bound to the populated database); `run`
is called from the PostgreSQL worker, whose Django is bound to the empty one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from .db import _pg_admin_connect, checkout_suffix, pg_url

BASE_DIR = Path(__file__).resolve().parent.parent
POP_DATABASE = os.environ.get("BENCH_POP_DATABASE") or "companion_bench_pop" + checkout_suffix()
# Bumped when the build changes shape: a marker with another format rebuilds the database.
FORMAT = 3
TEMPLATE_SEED = 4242
TEMPLATE_USER = "pop-template"
# The tables a user's data lives in, in load order, each with how to find the template's rows.
USER_TABLES = (
    ("memory_memoryprofile", "user_id"),
    ("memory_memoryversion", "user_id"),
    ("policy_userpolicyversion", "user_id"),
    ("conversations_conversation", "user_id"),
    ("conversations_message", "user_id"),
    ("conversations_turn", "user_id"),
    ("memory_memoryrecord", "user_id"),
    ("memory_tombstone", "user_id"),
    ("memory_slotretraction", "user_id"),
    ("policy_policyrule", "user_id"),
)
# Tables whose rows belong to a user through another table.
CHILD_TABLES = (("memory_memorysource", "memory_id", "memory_memoryrecord"),)
# Tables of user data that an EXPLAIN must never show scanned sequentially.
# (The deployment's runtime tokens, `config_apitoken`, are not a user's data: a handful of
# rows, which a sequential scan reads fastest.)
USER_DATA = (
    {t for t, _ in USER_TABLES}
    | {t for t, _, _ in CHILD_TABLES}
    | {
        "auth_user",
        "policy_decisionlog",
        "policy_policyanswer",
        "config_throttlewindow",
        "companion_cache",
    }
)
RETRACTIONS = 10  # slot retractions of the template user (a retracted value, SPEC W10)


def log(message: str) -> None:
    print(message, flush=True)


def spec_key(spec: dict) -> str:
    return json.dumps({**spec, "format": FORMAT}, sort_keys=True)


# ---------------------------------------------------------------------------------------------
# The database and its build (in the populated database's own process)


def _database_exists(conn) -> bool:
    return (
        conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (POP_DATABASE,)).fetchone()
        is not None
    )


def _recreate(conn) -> None:
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        (POP_DATABASE,),
    )
    conn.execute(f'DROP DATABASE IF EXISTS "{POP_DATABASE}"')
    conn.execute(f'CREATE DATABASE "{POP_DATABASE}"')


def _marker(cursor) -> str | None:
    cursor.execute("SELECT to_regclass('bench_populated')")
    if cursor.fetchone()[0] is None:
        return None
    cursor.execute("SELECT spec FROM bench_populated")
    row = cursor.fetchone()
    return row[0] if row else None


def _columns(cursor, table: str) -> list[tuple[str, str, str | None]]:
    cursor.execute(
        "SELECT column_name, data_type, CASE WHEN is_identity = 'YES' THEN 'identity' ELSE "
        "column_default END FROM information_schema.columns "
        "WHERE table_name = %s AND table_schema = 'public' ORDER BY ordinal_position",
        [table],
    )
    return cursor.fetchall()


def _copy_expressions(columns, user_column: str | None) -> tuple[list[str], list[str]]:
    """(target columns, select expressions) copying a template row for copy `u.n`."""
    names, exprs = [], []
    for name, data_type, default in columns:
        if default and (default == "identity" or default.startswith("nextval(")):
            continue  # a serial id: the copy gets its own
        names.append(f'"{name}"')
        if name == user_column:
            exprs.append("u.id")
        elif data_type == "uuid":
            exprs.append(f"md5(src.\"{name}\"::text || ':' || u.n)::uuid")
        elif name == "scope_id":
            exprs.append("pg_temp.copy_scope(src.scope_id, u.username, u.n)")
        else:
            exprs.append(f'src."{name}"')
    return names, exprs


COPY_SCOPE = """
CREATE FUNCTION pg_temp.copy_scope(s text, uname text, n int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE split_part(s, ':', 1)
    WHEN 'user' THEN 'user:' || uname
    WHEN 'character' THEN 'character:' || uname || ':' || split_part(s, ':', 3)
    WHEN 'conversation' THEN 'conversation:' || md5(split_part(s, ':', 2) || ':' || n)::uuid
    WHEN 'scene' THEN 'scene:' || md5(split_part(s, ':', 2) || ':' || n)::uuid || ':'
                      || split_part(s, ':', 3)
    ELSE s END
$$
"""


def _load_template(spec: dict) -> int:
    """The template user through the ORM: a generated world, a turn on about half of its
    messages (a user message answered by the next one), two boundary rules."""
    from django.contrib.auth import get_user_model

    from conversations.models import Message, Turn
    from memory.models import SlotRetraction
    from policy.models import PolicyRule, UserPolicyVersion

    from . import data, load

    world = data.build_world(
        spec["memories"], seed=TEMPLATE_SEED, user=TEMPLATE_USER, n_messages=40
    )
    loaded = load.load_world(world, with_turn=False)
    user = get_user_model().objects.get(pk=loaded.user_pk)
    turns = []
    for conv in world.conversations:
        rows = list(Message.objects.filter(conversation_id=conv.id).order_by("seq"))
        for m, nxt in zip(rows, rows[1:], strict=False):
            if m.role == "user" and nxt.role != "user":
                turns.append(
                    Turn(
                        user=user,
                        conversation_id=conv.id,
                        turn_key=f"t{m.seq}",
                        user_message=m,
                        reply_message=nxt,
                        status="replied",
                        created_at=m.created_at,
                    )
                )
    Turn.objects.bulk_create(turns)
    at = data.NOW - timedelta(days=100)
    PolicyRule.objects.bulk_create(
        [
            PolicyRule(
                user=user,
                capability_id="tone.playful",
                effect="allow",
                source="explicit-user",
                scope_kind="global",
                requested_by="user",
                valid_from=at,
                created_at=at,
            ),
            PolicyRule(
                user=user,
                capability_id="tone.playful",
                effect="deny",
                source="explicit-user",
                scope_kind="conversation",
                conversation_id=world.main.id,
                requested_by="user",
                valid_from=at,
                created_at=at,
            ),
        ]
    )
    UserPolicyVersion.objects.update_or_create(user=user, defaults={"version": 2})
    SlotRetraction.objects.bulk_create(
        [
            SlotRetraction(
                user=user, scope_id=r.scope_id, key=r.key, value_hash="", retracted_at=at
            )
            for r in world.records[:: max(1, len(world.records) // RETRACTIONS)]
        ][:RETRACTIONS]
    )
    return loaded.user_pk


def build(spec: dict) -> dict:
    """Build the filler (template + copies) and the marker; counts and seconds."""
    from django.db import connection

    started = time.perf_counter()
    template = _load_template(spec)
    log(f"  populated: template user loaded in {time.perf_counter() - started:.1f}s")
    copies = spec["users"] - 1
    timings = {}
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(COPY_SCOPE)
        cursor.execute(
            "SELECT username, password, date_joined FROM auth_user WHERE id = %s", [template]
        )
        _, password, joined = cursor.fetchone()
        cursor.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) SELECT %s, false, "
            "'pop-' || lpad(g::text, 5, '0'), '', '', '', false, true, %s "
            "FROM generate_series(1, %s) g",
            [password, joined, copies],
        )
        cursor.execute(
            "CREATE TEMP TABLE pop_users AS SELECT g AS n, u.id, u.username FROM "
            "generate_series(1, %s) g JOIN auth_user u ON u.username = "
            "'pop-' || lpad(g::text, 5, '0')",
            [copies],
        )
        for table, user_column in USER_TABLES:
            t0 = time.perf_counter()
            names, exprs = _copy_expressions(_columns(cursor, table), user_column)
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(exprs)} "
                f"FROM {table} src CROSS JOIN pop_users u WHERE src.{user_column} = %s",
                [template],
            )
            timings[table] = (cursor.rowcount, time.perf_counter() - t0)
            log(f"  populated: {table}: {cursor.rowcount:,} rows in {timings[table][1]:.1f}s")
        for table, fk, parent in CHILD_TABLES:
            t0 = time.perf_counter()
            names, exprs = _copy_expressions(_columns(cursor, table), None)
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(exprs)} "
                f"FROM {table} src JOIN {parent} p ON p.id = src.{fk} CROSS JOIN pop_users u "
                f"WHERE p.user_id = %s",
                [template],
            )
            timings[table] = (cursor.rowcount, time.perf_counter() - t0)
            log(f"  populated: {table}: {cursor.rowcount:,} rows in {timings[table][1]:.1f}s")
        cursor.execute("SET session_replication_role = DEFAULT")
        t0 = time.perf_counter()
        cursor.execute("VACUUM ANALYZE")
        log(f"  populated: VACUUM ANALYZE in {time.perf_counter() - t0:.1f}s")
        counts = row_counts(cursor)
        cursor.execute(
            "CREATE TABLE bench_populated (spec text PRIMARY KEY, built_at timestamptz, "
            "seconds double precision, counts text)"
        )
        seconds = time.perf_counter() - started
        cursor.execute(
            "INSERT INTO bench_populated VALUES (%s, now(), %s, %s)",
            [spec_key(spec), seconds, json.dumps(counts)],
        )
    return {
        "seconds": seconds,
        "counts": counts,
        "tables": {t: {"rows": r, "seconds": s} for t, (r, s) in timings.items()},
    }


def row_counts(cursor) -> dict[str, int]:
    out = {}
    for table in (
        "auth_user",
        "memory_memoryrecord",
        "memory_memorysource",
        "conversations_message",
        "conversations_turn",
        "policy_policyrule",
    ):
        cursor.execute(f"SELECT count(*) FROM {table}")
        out[table] = cursor.fetchone()[0]
    return out


# ---------------------------------------------------------------------------------------------
# EXPLAIN of every statement of a turn


class Explainer:
    """A connection execute wrapper: before each data statement, the same statement under
    `EXPLAIN (ANALYZE, BUFFERS)` in a savepoint (a transaction in autocommit) rolled back."""

    def __init__(self):
        self.plans: list[dict] = []
        self.step = ""

    def __call__(self, execute, sql, params, many, context):
        head = sql.lstrip()[:10].upper()
        if not many and head.startswith(("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")):
            connection, raw = context["connection"], context["cursor"].cursor
            atomic = connection.in_atomic_block
            raw.execute("SAVEPOINT bench_explain" if atomic else "BEGIN")
            try:
                raw.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plan = "\n".join(r[0] for r in raw.fetchall())
            except Exception as exc:  # noqa: BLE001 - recorded; the statement itself runs next
                plan = f"EXPLAIN failed: {type(exc).__name__}"
            finally:
                raw.execute("ROLLBACK TO SAVEPOINT bench_explain" if atomic else "ROLLBACK")
                if atomic:
                    raw.execute("RELEASE SAVEPOINT bench_explain")
            self.plans.append(
                {
                    "step": self.step,
                    "sql": _shorten(sql),
                    "plan": redact(plan),
                    "seq_scans": seq_scans(plan),
                }
            )
        return execute(sql, params, many, context)


def _shorten(sql: str, limit: int = 240) -> str:
    sql = re.sub(r"\s+", " ", sql).strip()
    return sql if len(sql) <= limit else sql[:limit] + " …"


_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_WORD = re.compile(r"[a-z_.\-]{1,24}")


def redact(plan: str) -> str:
    """The plan with its data left out: every quoted literal that is not a short lowercase
    word (a status, a scope kind, a capability) becomes '…' — no message, value, name, id,
    time or hash reaches the results (SPEC S1 for logs, kept here too)."""
    return _LITERAL.sub(lambda m: m.group(0) if _WORD.fullmatch(m.group(1)) else "'…'", plan)


def seq_scans(plan: str) -> list[str]:
    """The user tables a plan scans sequentially."""
    return sorted({m for m in re.findall(r"Seq Scan on (\w+)", plan) if m in USER_DATA})


def explain_turn(conversation: str, token: str) -> dict:
    """The EXPLAIN of each statement of the process's first turn and of the next one: create
    with plan (the second: one fact, one logged decision) and reply."""
    from django.db import connection
    from django.test import Client

    from .turns import PLAN, REPLY, TURN_TEXTS

    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    turns = f"/api/v1/conversations/{conversation}/turns"

    def post(path, body):
        response = client.post(path, json.dumps(body), content_type="application/json")
        assert response.status_code in (200, 201), response.content[:300]
        return response.json()

    explainer = Explainer()
    with connection.execute_wrapper(explainer):
        # The process's first turn reads what later turns take from the per-process caches
        # (the memory state, the catalog): its statements are explained too.
        explainer.step = "first turn of the process: create with plan"
        created = post(turns, {"turn_key": "explain-warm", "content": TURN_TEXTS[2], "plan": PLAN})
        explainer.step = "first turn of the process: reply"
        post(f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
        explainer.step = "create with plan"
        created = post(turns, {"turn_key": "explain", "content": TURN_TEXTS[0], "plan": PLAN})
        explainer.step = "reply"
        post(f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
    connection.close()
    return {
        "statements": explainer.plans,
        "seq_scans": sorted({t for p in explainer.plans for t in p["seq_scans"]}),
        "facts": len(created["extracted"]),
    }


def main(config: dict, out_path: str) -> int:
    """In the populated database's process: build or reuse, load the run's measured user,
    EXPLAIN its turn; the result (conversation, token, build, explains) as JSON."""
    spec = config["populated_spec"]
    result: dict = {"database": POP_DATABASE, "spec": spec}
    with _pg_admin_connect() as admin:
        if not _database_exists(admin):
            admin.execute(f'CREATE DATABASE "{POP_DATABASE}"')
    os.environ["DATABASE_URL"] = pg_url(POP_DATABASE)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    os.environ.setdefault("BENCH_LOG_NAME", "server-populated.log")
    os.environ.setdefault("THROTTLE_RUNTIME", "1000000/min")
    import django

    django.setup()
    from django.db import connection

    from config.models import ApiToken

    from . import data, load
    from .db import migrate

    with connection.cursor() as cursor:
        marker = _marker(cursor)
    if marker != spec_key(spec):
        if marker is not None or _has_users():
            connection.close()
            with _pg_admin_connect() as admin:
                _recreate(admin)
        log(
            f"  populated: building {POP_DATABASE} ({spec['users']:,} users × "
            f"{spec['memories']:,} memories)"
        )
        migrate()
        result["build"] = build(spec)
        result["reused"] = False
    else:
        migrate()
        with connection.cursor() as cursor:
            cursor.execute("SELECT seconds, counts, built_at FROM bench_populated")
            seconds, counts, built_at = cursor.fetchone()
        result["build"] = {
            "seconds": seconds,
            "counts": json.loads(counts),
            "built_at": str(built_at),
        }
        result["reused"] = True
        log(
            f"  populated: reusing {POP_DATABASE} (built {built_at:%Y-%m-%d %H:%M} in "
            f"{seconds:.0f}s)"
        )
    stamp = int(time.time())
    world = data.build_world(
        config["turn_main"],
        seed=config["seed"] + 1,
        user=f"pop-run-{stamp}",
        n_messages=100,
        id_seed=stamp * 31 + 7,
    )
    started = time.perf_counter()
    loaded = load.load_world(world, with_turn=False)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        result["counts"] = row_counts(cursor)
    log(
        f"  populated: measured user loaded in {time.perf_counter() - started:.1f}s; rows "
        f"{result['counts']}"
    )
    _, token = ApiToken.issue(f"bench-pop-{stamp}")
    result["conversation"] = loaded.conversation
    result["token"] = token
    result["explain"] = explain_turn(loaded.conversation, token)
    log(
        f"  populated: {len(result['explain']['statements'])} statements explained; "
        f"sequential scans of user tables: {result['explain']['seq_scans'] or 'none'}"
    )
    with open(out_path, "w") as fh:
        json.dump(result, fh, default=str)
    return 0


def _has_users() -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('auth_user')")
        if cursor.fetchone()[0] is None:
            return False
        cursor.execute("SELECT EXISTS (SELECT 1 FROM auth_user)")
        return cursor.fetchone()[0]


# ---------------------------------------------------------------------------------------------
# From the PostgreSQL worker


def run(empty_url: str, token: str, config: dict, log) -> dict:
    """Prepare the populated database (its own process), load the same comparison user into
    the empty database, and measure the single-client turn on both, rounds alternating."""
    import tempfile

    from django.db import connection

    from . import data, load, turns

    with tempfile.NamedTemporaryFile(prefix="bench-pop-", suffix=".json", delete=False) as fh:
        out_path = fh.name
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.populated", json.dumps(config), out_path],
        cwd=BASE_DIR,
        env={**env, "PYTHONUNBUFFERED": "1"},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=2400,
    )
    for line in proc.stdout.splitlines():
        log(line)
    if proc.returncode:
        raise RuntimeError(f"bench.populated exited with {proc.returncode}")
    with open(out_path) as fh:
        pop = json.load(fh)
    os.unlink(out_path)

    world = data.build_world(
        config["turn_main"],
        seed=config["seed"] + 1,
        user="bench-compare",
        n_messages=100,
        id_seed=config["seed"] * 3 + 11,
    )
    empty_user = load.load_world(world, with_turn=False)
    load.analyze()
    connection.close()
    servers = {
        "empty": turns.Server(empty_url, config["turn_workers"]),
        "populated": turns.Server(pg_url(POP_DATABASE), config["turn_workers"]),
    }
    servers["populated"].log_path = turns.RESULTS / "gunicorn-populated.log"
    try:
        for server in servers.values():
            server.start()
        compared = turns.compare_single(
            {
                "empty": (servers["empty"], [empty_user.conversation], token),
                "populated": (servers["populated"], [pop["conversation"]], pop["token"]),
            },
            seconds=config.get("populated_round_s", 3.0),
            rounds=config.get("populated_rounds", 6),
            log=log,
        )
    finally:
        for server in servers.values():
            server.stop()
    pop.pop("token", None)
    empty, full = compared["empty"], compared["populated"]
    return {
        **pop,
        "single": compared,
        "memories": config["turn_main"],
        "ratio": full["p50_ms"] / empty["p50_ms"] if empty["p50_ms"] else float("nan"),
    }


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1]), sys.argv[2]))
