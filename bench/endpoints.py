"""`POST /api/v1/memory/resolve` and `GET /api/v1/turns/{id}/prompt-plan` end to end through
Django, beside their floor.

The endpoints are called in-process with `django.test.Client` and a Bearer token, so the
whole request path runs (WSGI handler, middleware, URL routing, DRF authentication and
parsing, the view, the services and selectors, JSON rendering) but no socket. Each measured
call is paired with a call of the floor — the same candidate rows fetched with a raw cursor
(same WHERE as the selector) and the pure resolver, projection and planner on them — so
machine noise hits both alike and the overhead is a ratio.

Query counts come from `CaptureQueriesContext` and memory from `tracemalloc` (peak during
one call), each on an extra call outside the timed ones.
"""

from __future__ import annotations

import json
import statistics
import time
import tracemalloc
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from memory.domain import Tombstone
from memory.projection import project
from memory.resolver import resolve

from .data import NOW, SCENES

RECORD_COLUMNS = (
    "id, key, value, scope_kind, scope_id, scene, status, status_since, authority, confidence, "
    "valid_from, valid_until, recorded_at, evidence_time, supersedes_id, retracted_at, version"
)
PLAN_BUDGET = 8000


@dataclass
class CaseConfig:
    min_calls: int
    max_calls: int
    seconds: float  # time budget per case (endpoint + floor calls together)
    warmup: int = 2


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


# ---------------------------------------------------------------------------------------------
# The floor: raw SQL fetch of the same rows + the pure core


class Floor:
    """The same candidate rows the selectors read, through a raw DB-API cursor (same WHERE,
    no ORDER BY, no ORM), turned into pure-core records the cheapest way known: the database
    formats UUIDs and datetimes as text, parsed by `datetime.fromisoformat` in bulk,
    and records are built column by column (`memory.storage.build_records`, the same
    builder the hot-path selector uses)."""

    def __init__(self, vendor: str):
        from django.conf import settings

        self.vendor = vendor
        self.sqlite = vendor == "sqlite"
        cfg = settings.COMPANION
        self.likely = cfg["CERTAINTY_LIKELY"]
        self.uncertain = cfg["CERTAINTY_UNCERTAIN"]
        if self.sqlite:

            def uuid_sql(c):
                return (
                    f"substr({c}, 1, 8) || '-' || substr({c}, 9, 4) || '-' || "
                    f"substr({c}, 13, 4) || '-' || substr({c}, 17, 4) || '-' || substr({c}, 21)"
                )

            def dt_sql(c):
                return f"{c} || '+00:00'"
        else:

            def uuid_sql(c):
                return f"{c}::text"

            def dt_sql(c):
                return f"to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00:00'"

        self.uuid_sql, self.dt_sql = uuid_sql, dt_sql
        u, d = uuid_sql, dt_sql
        self.record_sql = (
            f"SELECT {u('id')}, key, value, scope_kind, scope_id, scene, status, "
            f"{d('status_since')}, authority, confidence, {d('valid_from')}, {d('valid_until')}, "
            f"{d('recorded_at')}, {d('evidence_time')}, {u('supersedes_id')}, {d('retracted_at')}, "
            "version, told_by_connection, told_by_name "
            "FROM memory_memoryrecord WHERE user_id = %s AND scope_id IN ({marks})"
        )
        self.sources_sql = (
            f"SELECT {u('s.memory_id')}, {u('s.message_id')} FROM memory_memorysource s "
            "JOIN memory_memoryrecord r ON r.id = s.memory_id "
            "WHERE r.user_id = %s AND r.scope_id IN ({marks})"
        )
        self.tomb_sql = (
            f"SELECT {u('id')}, scope_id, key, value_hash, {d('forgotten_at')}, "
            f"{d('blocks_sources_before')} FROM memory_tombstone WHERE user_id = %s"
        )

    def _parse(self, column):
        parse = datetime.fromisoformat
        if None in column:
            return [None if v is None else parse(v) for v in column]
        return list(map(parse, column))

    def memory(self, cursor, user_pk: int, username: str, scope_ids: list[str]):
        from memory.storage import DATETIME_COLUMNS, build_records

        marks = ",".join(["%s"] * len(scope_ids))
        cursor.execute(self.record_sql.format(marks=marks), [user_pk, *scope_ids])
        rows = cursor.fetchall()
        cursor.execute(self.sources_sql.format(marks=marks), [user_pk, *scope_ids])
        sources: dict[str, list[str]] = {}
        for memory_id, message_id in cursor.fetchall():
            sources.setdefault(memory_id, []).append(message_id)
        cursor.execute(self.tomb_sql, [user_pk])
        p = self._parse
        tombstones = [
            Tombstone(
                id=t[0],
                user=username,
                scope_id=t[1],
                key=t[2],
                value_hash=t[3],
                forgotten_at=p([t[4]])[0],
                blocks_sources_before=p([t[5]])[0],
            )
            for t in cursor.fetchall()
        ]
        cursor.execute("SELECT key, cardinality, label FROM memory_keydefinition")
        registry = cursor.fetchall()
        secret = b""
        if any(t.value_hash for t in tombstones):
            cursor.execute("SELECT secret FROM memory_memoryprofile WHERE user_id = %s", [user_pk])
            secret = bytes.fromhex(cursor.fetchone()[0])
        records = []
        if rows:
            columns = list(zip(*rows, strict=True))
            for index in DATETIME_COLUMNS:
                columns[index] = p(columns[index])
            records = build_records(columns, list(map(sources.get, columns[0])), username)
        many = frozenset(k for k, c, _ in registry if c == "many")
        labels = {k: label for k, _, label in registry}
        return records, tombstones, many, labels, secret

    def stored_id(self, ident: str) -> str:
        """A UUID as the database stores it (SQLite: 32 hex digits, no dashes)."""
        return ident.replace("-", "") if self.sqlite else ident

    def case(self, info) -> dict:
        """A loaded world (`bench.data`) as the floor's statements take it: its user, the scope
        ids of its first scene, and its turn and conversation ids as the database stores
        them."""
        return {
            "user": info.user,
            "user_pk": info.user_pk,
            "scope_ids": [
                f"user:{info.user}",
                f"character:{info.user}:{info.character}",
                f"conversation:{info.conversation}",
                f"scene:{info.conversation}:{SCENES[0]}",
            ],
            "turn_db": self.stored_id(info.turn),
            "conversation_db": self.stored_id(info.conversation),
        }

    def resolve_and_project(self, cursor, case: dict, context):
        records, tombstones, many, labels, secret = self.memory(
            cursor, case["user_pk"], case["user"], case["scope_ids"]
        )
        resolution = resolve(records, tombstones, context, many_keys=many, secret=secret)
        projection = project(
            resolution.active,
            labels=labels,
            many_keys=many,
            likely=self.likely,
            uncertain=self.uncertain,
        )
        return resolution, projection

    def resolve_call(self, case: dict, context):
        from django.db import connection

        with connection.cursor() as cursor:
            return self.resolve_and_project(cursor, case, context)

    def plan_call(self, case: dict, context):
        from django.db import connection

        from memory.domain import RESOLVER_VERSION
        from turns.planner import HistoryCandidate, PlanMessage, PlanParams, build_plan

        with connection.cursor() as cursor:
            resolution, projection = self.resolve_and_project(cursor, case, context)
            cursor.execute(
                f"SELECT {self.uuid_sql('m.id')}, m.seq, m.role, m.content "
                "FROM conversations_turn t "
                "JOIN conversations_message m ON m.id = t.user_message_id WHERE t.id = %s",
                [case["turn_db"]],
            )
            mid, seq, role, content = cursor.fetchone()
            size = "LENGTH(CAST(content AS BLOB))" if self.sqlite else "OCTET_LENGTH(content)"
            cursor.execute(
                f"SELECT {self.uuid_sql('id')}, seq, role, {size} FROM conversations_message "
                "WHERE user_id = %s AND conversation_id = %s AND seq < %s",
                [case["user_pk"], case["conversation_db"], seq],
            )
            candidates = [HistoryCandidate(i, s, r, n or 0) for i, s, r, n in cursor.fetchall()]

            def fetch(ids: list[str]) -> dict[str, str]:
                if not ids:
                    return {}
                keys = [self.stored_id(i) for i in ids]
                marks = ",".join(["%s"] * len(keys))
                cursor.execute(
                    f"SELECT {self.uuid_sql('id')}, content FROM conversations_message "
                    f"WHERE user_id = %s AND conversation_id = %s AND id IN ({marks})",
                    [case["user_pk"], case["conversation_db"], *keys],
                )
                return dict(cursor.fetchall())

            plan = build_plan(
                current=PlanMessage(mid, seq, role, content),
                history=(),
                history_candidates=candidates,
                fetch_content=fetch,
                memories=projection.prompt,
                memory_excluded=list(resolution.excluded) + list(projection.excluded),
                params=PlanParams(budget=PLAN_BUDGET),
                resolver_version=RESOLVER_VERSION,
            )
        return plan


# ---------------------------------------------------------------------------------------------
# Measuring


def _timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def _peak_kib(fn) -> float:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1024


def _queries(fn) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        fn()
    return len(captured.captured_queries)


def measure_pair(endpoint, floor, cfg: CaseConfig) -> dict:
    """Alternate endpoint and floor calls until the time budget or max_calls is reached."""
    for _ in range(cfg.warmup):
        endpoint()
        floor()
    ep: list[float] = []
    fl: list[float] = []
    started = time.perf_counter()
    while len(ep) < cfg.max_calls and (
        len(ep) < cfg.min_calls or time.perf_counter() - started < cfg.seconds
    ):
        ep.append(_timed(endpoint)[0])
        fl.append(_timed(floor)[0])
    p50, fp50 = statistics.median(ep), statistics.median(fl)
    return {
        "calls": len(ep),
        "p50_ms": p50 * 1000,
        "p95_ms": percentile(ep, 0.95) * 1000,
        "floor_p50_ms": fp50 * 1000,
        "floor_p95_ms": percentile(fl, 0.95) * 1000,
        "ratio": p50 / fp50 if fp50 else float("nan"),
    }


def _client(token: str):
    from django.test import Client

    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def run_cases(
    vendor: str, loaded: dict, token: str, cfg: CaseConfig, record_sizes, message_sizes, log
) -> list[dict]:
    """Every (endpoint, records, messages) case of one database."""
    from django.db import connection

    from conversations.domain import Context
    from conversations.selectors import LoadedContext  # noqa: F401 - app registry loaded

    client = _client(token)
    floor = Floor(vendor)
    results = []
    now_text = NOW.isoformat().replace("+00:00", "Z")
    for n in record_sizes:
        for m in message_sizes:
            info = loaded[(n, m)]
            case = floor.case(info)
            context = Context(
                user=info.user,
                character=info.character,
                conversation=info.conversation,
                scene=SCENES[0],
                now=NOW,
            )
            body = info.resolve_body()

            def resolve_endpoint(body=body):
                response = client.post(
                    "/api/v1/memory/resolve", body, content_type="application/json"
                )
                assert response.status_code == 200, response.content[:300]
                return response

            plan_url = f"/api/v1/turns/{info.turn}/prompt-plan?" + urlencode(
                {"budget": PLAN_BUDGET, "now": now_text}
            )

            def plan_endpoint(plan_url=plan_url):
                response = client.get(plan_url)
                assert response.status_code == 200, response.content[:300]
                return response

            kinds = []
            if m == message_sizes[0]:
                kinds.append(
                    (
                        "resolve",
                        resolve_endpoint,
                        lambda case=case, context=context: floor.resolve_call(case, context),
                    )
                )
            kinds.append(
                (
                    "plan",
                    plan_endpoint,
                    lambda case=case, context=context: floor.plan_call(case, context),
                )
            )
            for name, endpoint, floor_fn in kinds:
                started = time.perf_counter()
                row = {
                    "db": vendor,
                    "endpoint": name,
                    "records": n,
                    "messages": m if name == "plan" else None,
                }
                # Same answer? (a plan's hash covers its ids and text; a resolve's ids).
                answer = json.loads(endpoint().content)
                mine = floor_fn()
                if name == "plan":
                    row["match"] = answer["plan_hash"] == mine.plan_hash
                    row["history"] = len(answer["history"])
                    row["memories"] = len(answer["memories"])
                else:
                    resolution, projection = mine
                    row["match"] = (
                        [a["id"] for a in answer["active"]] == [r.id for r in resolution.active]
                        and len(answer["excluded"]) == len(resolution.excluded)
                        and len(answer["prompt"]) == len(projection.prompt)
                    )
                    row["candidates"] = answer["trace"]["candidates"]
                    row["active"] = len(answer["active"])
                row["queries"] = _queries(endpoint)
                row["floor_queries"] = _queries(floor_fn)
                row["peak_kib"] = _peak_kib(endpoint)
                row["floor_peak_kib"] = _peak_kib(floor_fn)
                row.update(measure_pair(endpoint, floor_fn, cfg))
                row["seconds"] = time.perf_counter() - started
                log(
                    f"  {vendor:8} {name:7} records={n:<6} "
                    f"messages={m if name == 'plan' else '-':<6} "
                    f"p50={row['p50_ms']:.1f}ms floor={row['floor_p50_ms']:.1f}ms "
                    f"ratio={row['ratio']:.2f} queries={row['queries']} calls={row['calls']}"
                )
                results.append(row)
    connection.close()
    return results


def message_text_kib(loaded) -> dict:
    """Total UTF-8 size of each main conversation's messages (what 'loading the whole
    history' would cost)."""
    from django.db import connection

    out = {}
    with connection.cursor() as cursor:
        for (n, m), info in loaded.items():
            size = (
                "LENGTH(CAST(content AS BLOB))"
                if connection.vendor == "sqlite"
                else "OCTET_LENGTH(content)"
            )
            conv = (
                info.conversation.replace("-", "")
                if connection.vendor == "sqlite"
                else info.conversation
            )
            cursor.execute(
                f"SELECT SUM({size}) FROM conversations_message WHERE conversation_id = %s", [conv]
            )
            out[f"{n}/{m}"] = (cursor.fetchone()[0] or 0) / 1024
    return out
