"""The cost of reading the event feed (SPEC V2) when many events are stored.

`n` events are written the way the outbox writes them — in many transactions (chunks of
1,000 rows, each its own transaction, so each chunk carries its own writing transaction id
and the feed's (transaction, id) order spans many transactions) — for 1,000 users and the
feed's event types. Then `GET /api/v1/events` is timed through Django's test client (the
whole request: authentication, the one query, the JSON) in the ways a reader calls it:

- `tail`: a follower that is caught up, its cursor near the end (the call made most often);
- `start`: the first page, no cursor;
- `middle`: a cursor half-way through what is stored;
- `user`: one user's events from the start (`?user=`);
- `type`: one type's events from the start (`?type=`), a sixth of what is stored;
- `rare type`: a type of which 100 events were written last (`user.deleted`), from the start.

Each case reports its p50 and its statement count; the target (20 ms p50 at 1,000,000 events on
PostgreSQL) is compared with the slowest case's p50."""

from __future__ import annotations

import statistics
import time

TARGET_MS = 20.0
CHUNK = 1_000
USERS = 1_000
TYPES = (
    "memory.created",
    "memory.changed",
    "memory.forgotten",
    "boundary.changed",
    "settings.changed",
    "conversation.deleted",
)


def _populate(n_events: int) -> None:
    from django.db import connection

    from events.models import Event

    table = Event._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, n_events, CHUNK):
            size = min(CHUNK, n_events - start)
            # One statement per chunk, autocommit: its own transaction (and xid8 on PostgreSQL).
            _insert_chunk(cursor, table, start, size, connection.vendor)
        cursor.execute(
            f"INSERT INTO {table} (type, user_ref, occurred_at, data) "
            + (
                "SELECT 'user.deleted', 'gone-' || i, now(), '{}'::jsonb "
                "FROM generate_series(1, 100) AS i"
                if connection.vendor == "postgresql"
                else "WITH RECURSIVE s(i) AS "
                "(SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 100) "
                "SELECT 'user.deleted', 'gone-' || i, datetime('now'), '{}' FROM s"
            )
        )
        if connection.vendor == "postgresql":
            cursor.execute(f"ANALYZE {table}")


def _insert_chunk(cursor, table: str, start: int, size: int, vendor: str) -> None:
    types = "ARRAY[" + ",".join(f"'{t}'" for t in TYPES) + "]"
    if vendor == "postgresql":
        cursor.execute(
            f"INSERT INTO {table} (type, user_ref, occurred_at, data) "
            f"SELECT ({types})[1 + mod(i, {len(TYPES)})], 'user-' || mod(i, {USERS}), "
            "now() - make_interval(secs => %s - i), "
            "jsonb_build_object('memory', 'm' || i, 'version', mod(i, 97)) "
            "FROM generate_series(%s, %s) AS i",
            [start + size, start, start + size - 1],
        )
    else:
        rows = [
            (
                TYPES[i % len(TYPES)],
                f"user-{i % USERS}",
                f'{{"memory": "m{i}", "version": {i % 97}}}',
            )
            for i in range(start, start + size)
        ]
        cursor.executemany(
            f"INSERT INTO {table} (type, user_ref, occurred_at, data, txid) "
            "VALUES (%s, %s, datetime('now'), %s, 0)",
            rows,
        )


def _measure(client, url: str, calls: int, warmup: int = 3) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(warmup):
        assert client.get(url).status_code == 200
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        response = client.get(url)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:300]
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).json()
    return {
        "p50_ms": statistics.median(samples),
        "max_ms": max(samples),
        "calls": calls,
        "statements": len(queries),
        "events": len(page["results"]),
    }


def run(n_events: int, calls: int, token: str, log) -> dict:
    from django.test import Client
    from django.utils import timezone

    from events.feed import Position, encode_cursor
    from events.models import Event

    started = time.perf_counter()
    _populate(n_events)
    populate_s = time.perf_counter() - started
    stored = Event.objects.count()
    log(f"  events: {stored:,} stored in {populate_s:.1f}s")

    def cursor_before(nth_from_start: int) -> str:
        row = Event.objects.order_by("txid", "id").values("txid", "id")[nth_from_start]
        return encode_cursor(Position(row["txid"], row["id"]), timezone.now())

    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    base = "/api/v1/events?limit=100"
    cases = {
        "tail": f"{base}&after={cursor_before(stored - 50)}",
        "start": base,
        "middle": f"{base}&after={cursor_before(stored // 2)}",
        "user": f"{base}&user=user-7",
        "type": f"{base}&type=memory.forgotten",
        "rare type": f"{base}&type=user.deleted",
    }
    results = {}
    for name, url in cases.items():
        results[name] = _measure(client, url, calls)
        r = results[name]
        log(
            f"  GET /events {name}: p50 {r['p50_ms']:.1f} ms ({r['events']} events a page, "
            f"{r['statements']} statements)"
        )
    worst = max(results, key=lambda k: results[k]["p50_ms"])
    return {
        "events": stored,
        "populate_s": populate_s,
        "cases": results,
        "worst": worst,
        "p50_ms": results[worst]["p50_ms"],
        "target_ms": TARGET_MS,
    }
