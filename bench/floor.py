"""The turn against its floor: what the one round trip + reply costs with nothing but its SQL
and its pure pass — the statements the turn issues, on a raw psycopg connection, and the same
calls into `turns.pipeline` on the same inputs; no Django request path, no ORM, no HTTP.

Each floor turn is first run through Django (the in-process `django.test.Client`, Bearer
token: create with `plan` → reply) inside a transaction that is then rolled back, with every
statement recorded as Django's cursor runs it (`connection.execute_wrapper`: the SQL text and
its parameters, counted beside `CaptureQueriesContext`) and every top-level call into
`turns.pipeline` recorded with its arguments. The capture is not timed. The floor then runs
that turn: the recorded statements, in order, with their parameters, on a raw psycopg
connection opened with Django's own connection parameters (client-side binding, no prepared
statements), inside the transactions the turn opened — its outermost savepoints become
BEGIN … COMMIT, which is what they are in a request — and fetching every row; then the
recorded pure calls again. So the floor commits what the turn would have committed, and the
next capture sees the state the turn would have left. Turns cycle through the same messages
as the gunicorn phases (`bench.turns.TURN_TEXTS`).

Rounds of floor turns alternate with rounds of the real turn — the single-client one round
trip + reply on the same conversation, against a gunicorn started here — so the load of the
shared machine hits both alike and their ratio is the figure (`run`).

The pure pass is found as the calls into `turns.pipeline`: should the turn's pure pass move
elsewhere, a capture that sees no such call stops the run rather than report a floor without
it.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import statistics
import time
from dataclasses import dataclass, field

from .endpoints import percentile

BEGIN, COMMIT, ROLLBACK = "BEGIN", "COMMIT", "ROLLBACK"
_SAVEPOINT = re.compile(r'^\s*SAVEPOINT\s+"?([\w]+)"?\s*$', re.IGNORECASE)
_RELEASE = re.compile(r'^\s*RELEASE\s+SAVEPOINT\s+"?([\w]+)"?\s*$', re.IGNORECASE)
_ROLLBACK_TO = re.compile(r'^\s*ROLLBACK\s+TO\s+SAVEPOINT\s+"?([\w]+)"?\s*$', re.IGNORECASE)


@dataclass
class Captured:
    """One turn as Django ran it: `program` holds the statements in order ((sql, params, many),
    or BEGIN / COMMIT / ROLLBACK where the turn's transactions began and ended) and `pure`
    the top-level calls into `turns.pipeline` ((function, args, kwargs, raised type))."""

    program: list = field(default_factory=list)
    pure: list = field(default_factory=list)
    statements: int = 0  # what CaptureQueriesContext counted, savepoints left out
    captured_queries: int = 0


def to_program(recorded: list[tuple]) -> list:
    """Recorded statements of a turn run inside one outer transaction → the statements the turn
    sends when it runs alone: a savepoint at depth 0 is the start of one of its transactions,
    its release the commit (a rollback to it, the rollback); deeper savepoints stay."""
    program: list = []
    depth = 0
    rolled_back: set[str] = set()
    for sql, params, many in recorded:
        text = sql if isinstance(sql, str) else str(sql)
        if (m := _SAVEPOINT.match(text)) is not None:
            program.append(BEGIN if depth == 0 else (text, None, False))
            depth += 1
        elif (m := _RELEASE.match(text)) is not None:
            depth -= 1
            if depth == 0:
                if m.group(1) not in rolled_back:
                    program.append(COMMIT)
            else:
                program.append((text, None, False))
        elif (m := _ROLLBACK_TO.match(text)) is not None:
            if depth == 1:
                program.append(ROLLBACK)
                rolled_back.add(m.group(1))
            else:
                program.append((text, None, False))
        else:
            program.append((sql, params, many))
    if depth != 0:
        raise RuntimeError(f"the turn left {depth} savepoint(s) open")
    return program


@contextlib.contextmanager
def recording_pure(calls: list):
    """Record every top-level call into `turns.pipeline` (a call from one of its functions to
    another is part of the outer call)."""
    from turns import pipeline

    originals = {
        name: fn
        for name, fn in vars(pipeline).items()
        if inspect.isfunction(fn)
        and fn.__module__ == pipeline.__name__
        and not name.startswith("__")
    }
    depth = [0]

    def wrap(fn):
        def recorded(*args, **kwargs):
            top = depth[0] == 0
            depth[0] += 1
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if top:
                    calls.append((fn, args, kwargs, type(exc)))
                raise
            finally:
                depth[0] -= 1
            if top:
                calls.append((fn, args, kwargs, None))
            return result

        return recorded

    for name, fn in originals.items():
        setattr(pipeline, name, wrap(fn))
    try:
        yield calls
    finally:
        for name, fn in originals.items():
            setattr(pipeline, name, fn)


def capture(client, conversation: str, key: str, text: str, plan: dict, reply: str) -> Captured:
    """Run one turn (create with `plan` → reply) through Django, record it, roll it back."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    recorded: list[tuple] = []

    def wrapper(execute, sql, params, many, context):
        recorded.append((sql, params, many))
        return execute(sql, params, many, context)

    captured = Captured()
    with transaction.atomic():
        with (
            recording_pure(captured.pure),
            CaptureQueriesContext(connection) as counted,
            connection.execute_wrapper(wrapper),
        ):
            created = client.post(
                f"/api/v1/conversations/{conversation}/turns",
                json.dumps({"turn_key": key, "content": text, "plan": plan}),
                content_type="application/json",
            )
            if created.status_code != 201:
                raise RuntimeError(
                    f"floor capture: turn {created.status_code} {created.content[:200]!r}"
                )
            replied = client.post(
                f"/api/v1/turns/{created.json()['id']}/reply",
                json.dumps({"content": reply}),
                content_type="application/json",
            )
            if replied.status_code != 201:
                raise RuntimeError(
                    f"floor capture: reply {replied.status_code} {replied.content[:200]!r}"
                )
        transaction.set_rollback(True)
    captured.program = to_program(recorded)
    captured.statements = sum(1 for step in captured.program if isinstance(step, tuple))
    captured.captured_queries = len(counted.captured_queries)
    if not captured.pure:
        raise RuntimeError("floor capture: the turn made no call into turns.pipeline")
    return captured


def label(step) -> str:
    """A statement's first words (SQL text only, never its values)."""
    return step if isinstance(step, str) else " ".join(str(step[0]).split())[:72]


def replay_sql(conn, program: list, timings: dict | None = None) -> None:
    """The turn's statements on a raw psycopg connection (autocommit; BEGIN and COMMIT sent
    where the turn's transactions began and ended), every row fetched. `timings`, when given,
    collects each step's milliseconds under its `label`."""
    cursor = conn.cursor()
    for step in program:
        started = time.perf_counter()
        if step is BEGIN or step is COMMIT or step is ROLLBACK:
            cursor.execute(step)
        else:
            sql, params, many = step
            if many:
                cursor.executemany(sql, params)
            else:
                cursor.execute(sql, params)
            if cursor.description is not None:
                cursor.fetchall()
        if timings is not None:
            timings.setdefault(label(step), []).append((time.perf_counter() - started) * 1000)
    cursor.close()


def replay_pure(calls: list) -> None:
    for fn, args, kwargs, raised in calls:
        if raised is None:
            fn(*args, **kwargs)
        else:
            try:
                fn(*args, **kwargs)
            except raised:
                pass


def raw_connection():
    """A psycopg connection with the parameters Django's own connection uses."""
    from django.db import connection

    params = connection.get_connection_params()
    conn = connection.Database.connect(**params)
    conn.autocommit = True
    return conn


def run(
    conversation: str,
    token: str,
    *,
    rounds: int,
    turns_per_round: int,
    seconds_per_round: float,
    database_url: str,
    workers: int,
    texts,
    plan: dict,
    reply: str,
    log,
) -> dict:
    """The floor beside the turn, in alternating rounds so the machine's load (shared cores)
    hits both alike: each round runs `turns_per_round` floor turns on `conversation` (texts
    cycled), then the single-client one round trip + reply on the same conversation against
    a gunicorn started here for `seconds_per_round`. `p50_ms`: the floor's p50 over every
    floor turn; `turn_p50_ms`: the median of the rounds' single-client p50s."""
    from django.test import Client

    from . import turns as whole

    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    server = whole.Server(database_url, workers, log_name="gunicorn-floor.log")
    server.start()
    conn = raw_connection()
    try:
        # Not measured: one turn through each path, so this process and the server's workers
        # are as warm as a worker serving turns.
        warm = capture(client, conversation, "floor-warm", texts[0], plan, reply)
        replay_sql(conn, warm.program)
        # Twice as many threads as workers, so every sync worker most likely serves some of
        # them: a worker's first turns (its caches filling) would otherwise land in a round.
        whole._drive(
            server,
            2 * workers,
            3.0,
            whole.turn_one_work_factory([conversation] * 2 * workers, token, "floor-warm"),
        )
        totals, sql_ms, pure_ms, statements, queries = [], [], [], [], []
        steps: dict[str, list[float]] = {}
        drives = []
        for r in range(rounds):
            for i in range(turns_per_round):
                n = r * turns_per_round + i
                captured = capture(
                    client, conversation, f"floor-{n}", texts[n % len(texts)], plan, reply
                )
                started = time.perf_counter()
                replay_sql(conn, captured.program, steps)
                between = time.perf_counter()
                replay_pure(captured.pure)
                ended = time.perf_counter()
                sql_ms.append((between - started) * 1000)
                pure_ms.append((ended - between) * 1000)
                totals.append((ended - started) * 1000)
                statements.append(captured.statements)
                queries.append(captured.captured_queries)
            drives.append(
                whole._drive(
                    server,
                    1,
                    seconds_per_round,
                    whole.turn_one_work_factory([conversation], token, f"floor-turn-{r}"),
                )
            )
    finally:
        conn.close()
        server.stop()
    turn_p50s = [d["p50_ms"] for d in drives]
    out = {
        "turns": len(totals),
        "rounds": rounds,
        "p50_ms": statistics.median(totals),
        "p95_ms": percentile(totals, 0.95),
        "sql_p50_ms": statistics.median(sql_ms),
        "pure_p50_ms": statistics.median(pure_ms),
        # The turn itself in the same rounds (single client, gunicorn, same conversation).
        "turn_p50_ms": statistics.median(turn_p50s),
        "turn_p50_min_ms": min(turn_p50s),
        "turn_p50_max_ms": max(turn_p50s),
        "turn_p50s_ms": turn_p50s,
        "turn_units": sum(d["units"] for d in drives),
        "errors": sum(d["errors"] for d in drives),
        "error_samples": [x for d in drives for x in d["error_samples"]][:5],
        "statements_p50": statistics.median(statements),
        "statements": sorted(set(statements)),
        "captured_queries": sorted(set(queries)),
        "pure_calls": sorted({fn.__name__ for fn, *_ in captured.pure}),
        # The last floor turn's steps, and every step's p50 over the turns that ran it.
        "last_turn": [label(step) for step in captured.program],
        "steps": {
            name: {"runs": len(ms), "p50_ms": statistics.median(ms)}
            for name, ms in sorted(steps.items(), key=lambda kv: -sum(kv[1]))
        },
    }
    log(
        f"  floor (raw psycopg + turns.pipeline), {out['turns']} turns in {rounds} rounds: p50 "
        f"{out['p50_ms']:.1f} ms (SQL {out['sql_p50_ms']:.1f}, pure {out['pure_p50_ms']:.1f}; "
        f"{out['statements_p50']:.0f} statements a turn); the turn in the same rounds p50 "
        f"{out['turn_p50_ms']:.1f} ms (rounds {min(turn_p50s):.1f}–{max(turn_p50s):.1f}) "
        f"errors={out['errors']}"
    )
    return out
