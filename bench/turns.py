"""The whole turn against gunicorn (`config.wsgi` with `bench.settings`) on PostgreSQL, beside
the same server's trivial JSON endpoint (`/bench/ping`) as the ceiling and the authenticated
DRF one (`/bench/ping-auth`): the three-request turn (create → plan → reply) and the one round
trip of I7 (create with `plan` → reply), each under load from concurrent client threads, and
the one round trip from a single client thread (the latency a user waits for, p50 and p99).

gunicorn is started here on a free loopback port and stopped (SIGTERM to the process this
module started, then a bounded wait) when the measurement ends. Requests go only to
127.0.0.1 and are bounded in time.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from .endpoints import percentile

BASE_DIR = Path(__file__).resolve().parent.parent
RESULTS = BASE_DIR / "bench" / "results"

TURN_TEXTS = (
    "My dog's name is Rex.",
    "How was your day? The rain kept me inside all afternoon.",
    "I like green tea.",
    "We watered the basil on the rooftop today.",
    "Actually, my dog's name is Max.",
    "I live in Lisbon.",
    "Tell me again what we talked about in the greenhouse.",
    "I dislike being rushed.",
)
THROTTLE_RUNTIME = "1000000/min"
REPLY = "Of course. I remember, and I'm glad you told me."


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """gunicorn serving the project on a free loopback port."""

    def __init__(
        self,
        database_url: str,
        workers: int,
        env: dict | None = None,
        log_name: str = "gunicorn.log",
    ):
        self.port = free_port()
        self.workers = workers
        self.database_url = database_url
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = RESULTS / log_name

    def start(self, timeout: float = 60) -> None:
        env = dict(os.environ)
        env.update(
            {
                "DATABASE_URL": self.database_url,
                "DJANGO_SETTINGS_MODULE": "bench.settings",
                "BENCH_LOG_NAME": "server-gunicorn.log",
                # Persistent connections, as a production deployment runs them (a new
                # PostgreSQL backend per request would dominate every request).
                "CONN_MAX_AGE": env.get("CONN_MAX_AGE", "60"),
                # The runtime throttle still counts every request (its statement is measured);
                # its limit, sized for one runtime, is raised so 8 clients on one token measure
                # the turn and not the limit. A 429 would still count as an error.
                "THROTTLE_RUNTIME": env.get("THROTTLE_RUNTIME", THROTTLE_RUNTIME),
                **self.extra_env,
            }
        )
        RESULTS.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "w")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(self.workers),
                "--worker-class",
                "sync",
                "--timeout",
                "120",
                "--graceful-timeout",
                "5",
                "--log-level",
                "warning",
            ],
            cwd=BASE_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited early; see {self.log_path}")
            try:
                status, _ = request(self.connection(), "GET", "/bench/ping")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not answer in time")

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def request(conn, method: str, path: str, body: dict | None = None, token: str | None = None):
    headers = {"Accept": "application/json"}
    payload = None
    if body is not None:
        payload = json.dumps(body)
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, payload, headers)
    response = conn.getresponse()
    data = response.read()
    if response.getheader("Connection", "").lower() == "close":
        conn.close()
    return response.status, data


def _drive(
    server: Server,
    clients: int,
    seconds: float,
    work,
    *,
    limit: int | None = None,
    keep: bool = False,
) -> dict:
    """Run `work(index, conn, n)` in `clients` threads until `seconds` have passed (or each
    thread made `limit` calls); each call returns (units done, errors). Latency is per call;
    with `keep`, `latencies_s` holds every one (so several drives can be merged, `summary`)."""
    stop_at = [0.0]
    lock = threading.Lock()
    latencies: list[float] = []
    counts = {"units": 0, "errors": 0, "error_samples": []}
    barrier = threading.Barrier(clients + 1)

    def loop(index: int) -> None:
        conn = server.connection()
        mine: list[float] = []
        units = errors = 0
        samples: list[str] = []
        barrier.wait()
        n = 0
        while time.perf_counter() < stop_at[0] and (limit is None or n < limit):
            started = time.perf_counter()
            try:
                done, failed = work(index, conn, n)
            except Exception as exc:  # noqa: BLE001 - an error is a result here
                done, failed = 0, 1
                samples.append(f"{type(exc).__name__}: {exc}"[:200])
                conn.close()
                conn = server.connection()
            if isinstance(failed, str):
                samples.append(failed[:200])
                failed = 1
            mine.append(time.perf_counter() - started)
            units += done
            errors += failed
            n += 1
        conn.close()
        with lock:
            latencies.extend(mine)
            counts["units"] += units
            counts["errors"] += errors
            counts["error_samples"].extend(samples[:3])

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + seconds
    started = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join(timeout=seconds + 120)
    elapsed = time.perf_counter() - started
    return {
        **summary(clients, elapsed, latencies, counts["units"], counts["errors"]),
        "error_samples": counts["error_samples"][:5],
        **({"latencies_s": latencies} if keep else {}),
    }


def summary(clients: int, seconds: float, latencies: list[float], units: int, errors: int) -> dict:
    return {
        "clients": clients,
        "seconds": seconds,
        "units": units,
        "per_second": units / seconds if seconds else 0.0,
        "p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p95_ms": percentile(latencies, 0.95) * 1000 if latencies else float("nan"),
        "p99_ms": percentile(latencies, 0.99) * 1000 if latencies else float("nan"),
        "errors": errors,
    }


def ping_work(index, conn, n):
    status, _ = request(conn, "GET", "/bench/ping")
    return (1, 0) if status == 200 else (0, f"ping {status}")


def ping_auth_factory(token: str):
    def work(index, conn, n):
        status, _ = request(conn, "GET", "/bench/ping-auth", None, token)
        return (1, 0) if status == 200 else (0, f"ping-auth {status}")

    return work


def _turn_create(conn, conversation: str, key: str, n: int, token: str, plan=None):
    """A turn on `conversation` for the `n`th text, as a runtime creates it (with `plan`: the
    one round trip, I7)."""
    body = {"turn_key": key, "content": TURN_TEXTS[n % len(TURN_TEXTS)]}
    if plan is not None:
        body["plan"] = plan
    return request(conn, "POST", f"/api/v1/conversations/{conversation}/turns", body, token)


def _reply(conn, turn: str, token: str):
    """The turn's reply, as a runtime commits it; the work's answer: (1, 0) once stored."""
    status, data = request(conn, "POST", f"/api/v1/turns/{turn}/reply", {"content": REPLY}, token)
    return (1, 0) if status == 201 else (0, f"reply {status} {data[:120]!r}")


def turn_work_factory(conversations: list[str], token: str, tag: str):
    def work(index, conn, n):
        conversation = conversations[index % len(conversations)]
        status, data = _turn_create(conn, conversation, f"{tag}-{index}-{n}", n, token)
        if status != 201:
            return 0, f"turn {status} {data[:120]!r}"
        turn = json.loads(data)["id"]
        status, data = request(
            conn,
            "GET",
            f"/api/v1/turns/{turn}/prompt-plan?budget=8000&capabilities=tone.playful",
            None,
            token,
        )
        if status != 200:
            return 0, f"plan {status} {data[:120]!r}"
        return _reply(conn, turn, token)

    return work


PLAN = {"budget": 8000, "capabilities": ["tone.playful"]}


def turn_one_work_factory(
    conversations: list[str], token: str, tag: str, answers: list[int] | None = None
):
    """I7: the turn in one round trip before generating (create with `plan`), then the reply;
    `answers`, when given, collects each create answer's JSON body size in bytes."""

    def work(index, conn, n):
        conversation = conversations[index % len(conversations)]
        status, data = _turn_create(conn, conversation, f"{tag}-{index}-{n}", n, token, PLAN)
        if status != 201:
            return 0, f"turn+plan {status} {data[:120]!r}"
        if answers is not None:
            answers.append(len(data))
        return _reply(conn, json.loads(data)["id"], token)

    return work


def inprocess_queries(conversation: str, token: str) -> dict:
    """SQL queries per step of a turn (CaptureQueriesContext, in-process test client, autocommit
    as in production), counted in a warm process: one turn with a plan and its reply run first
    and are not counted (the catalog, the URL resolvers and the memory cache are then as a
    worker has them after its first turn). Counted: the three-request turn (create, plan,
    reply) and the one round trip (create with `plan`, reply) for a message the extractor
    learns one fact from (`TURN_TEXTS[0]`) with one logged decision (the plan asks about one
    capability), for the correction message (`TURN_TEXTS[4]`) and for one it learns nothing
    from."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    out = {}

    def count(method, path, body=None) -> tuple[int, dict]:
        with CaptureQueriesContext(connection) as captured:
            if body is None:
                response = getattr(client, method)(path)
            else:
                response = getattr(client, method)(
                    path, json.dumps(body), content_type="application/json"
                )
        assert response.status_code in (200, 201), response.content[:300]
        return len(captured.captured_queries), response.json()

    turns = f"/api/v1/conversations/{conversation}/turns"
    _, created = count(
        "post", turns, {"turn_key": "count-warm", "content": TURN_TEXTS[2], "plan": PLAN}
    )
    count("post", f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
    out["create"], created = count("post", turns, {"turn_key": "count-3", "content": TURN_TEXTS[5]})
    out["plan"], _ = count(
        "get", f"/api/v1/turns/{created['id']}/prompt-plan?budget=8000&capabilities=tone.playful"
    )
    out["reply"], _ = count("post", f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
    out["total"] = out["create"] + out["plan"] + out["reply"]
    # The one round trip with one plain fact and one logged decision: the target's turn.
    out["create_plan"], created = count(
        "post", turns, {"turn_key": "count-1", "content": TURN_TEXTS[0], "plan": PLAN}
    )
    out["create_plan_facts"] = len(created["extracted"])
    out["reply_one"], _ = count("post", f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
    out["one_total"] = out["create_plan"] + out["reply_one"]
    # A correction (the dog's name again) and a message that teaches nothing (a question).
    out["create_plan_correction"], created = count(
        "post", turns, {"turn_key": "count-c", "content": TURN_TEXTS[4], "plan": PLAN}
    )
    out["create_plan_correction_facts"] = len(created["extracted"])
    count("post", f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
    out["create_plan_no_fact"], created = count(
        "post", turns, {"turn_key": "count-0", "content": TURN_TEXTS[6], "plan": PLAN}
    )
    out["create_plan_no_fact_facts"] = len(created["extracted"])
    count("post", f"/api/v1/turns/{created['id']}/reply", {"content": REPLY})
    out["ping_auth"], _ = count("get", "/bench/ping-auth")
    out["warm"] = True
    connection.close()
    return out


def _warm(
    server: Server, clients: int, seconds: float, conversations: list[str], token: str, tag: str
) -> None:
    """Every worker's imports, URL resolvers, connections and caches, outside the measurement."""
    _drive(server, clients, seconds, ping_work)
    _drive(server, clients, seconds, turn_work_factory(conversations, token, tag))
    _drive(server, clients, seconds, turn_one_work_factory(conversations, token, tag + "1"))


def run(
    database_url: str,
    groups: dict[int, list[str]],
    token: str,
    *,
    clients: int,
    workers: int,
    seconds: float,
    log,
    main_size: int,
    singles: dict[int, str],
    long: str | None = None,
    single_turns: int = 100,
    single_rounds: int = 4,
) -> dict:
    """`groups`: for each memory count, one conversation per client thread (its user has that
    many memories). The pings and the three-request turn run at `main_size`; the one round
    trip runs at every size from `clients` threads, and from one on `singles[size]`, a fresh
    conversation no other phase touches (`bench.single`) — at `main_size` in alternating
    rounds with the same turn on `long`, a long conversation of a user with as many memories.
    Every `clients`-thread phase reports the server's CPU per request (`bench.cpu`)."""
    from . import single
    from .cpu import cpu_ratio, metered
    from .db import PG_DATABASE
    from .single import rate_text as _rate
    from .single import single_text as _single_text

    server = Server(database_url, workers)
    server.start()
    main = groups[main_size]

    def phase(per_unit: int, work, duration: float = seconds) -> dict:
        return metered(
            server, PG_DATABASE, per_unit, lambda: _drive(server, clients, duration, work)
        )

    try:
        warm = min(2.0, seconds / 4)
        _warm(server, clients, warm, main, token, "warm")
        ping_before = phase(1, ping_work, seconds / 2)
        log(f"  gunicorn ping      {_rate(ping_before, 'req/s')}")
        ping_auth = phase(1, ping_auth_factory(token), seconds / 2)
        log(f"  gunicorn ping-auth {_rate(ping_auth, 'req/s')}")
        turns = phase(3, turn_work_factory(main, token, "bench"))
        log(f"  gunicorn turns     {_rate(turns, 'turns/s')} p95={turns['p95_ms']:.0f}ms")
        sizes, long_conversation = {}, None
        for n, conversations in sorted(groups.items()):
            if n != main_size:
                _warm(server, clients, warm / 2, conversations, token, f"warm-{n}")
            one = phase(2, turn_one_work_factory(conversations, token, f"one-{n}"))
            log(f"  gunicorn one-trip  {n:>6} memories: {_rate(one, 'turns/s')}")
            measured = {"single": singles[n]}
            if n == main_size and long:
                measured["long"] = long
            measured = single.run(
                server,
                measured,
                token,
                turns=single_turns,
                rounds=single_rounds,
                seconds=seconds / 2,
                workers=workers,
                tag=f"single-{n}",
            )
            for name, label in (("single", f"{n:>6} memories"), ("long", "long conversation")):
                if name in measured:
                    log(f"  gunicorn 1 client  {label}: {_single_text(measured[name])}")
            plan_bytes = measured["single"].pop("plan_bytes")
            sizes[str(n)] = {
                "one_trip": one,
                "single_client": measured["single"],
                "plan_bytes": plan_bytes,
            }
            if "long" in measured:
                long_conversation = {
                    "records": n,
                    "plan_bytes": measured["long"].pop("plan_bytes"),
                    "single_client": measured["long"],
                }
        ping_after = phase(1, ping_work, seconds / 2)
        log(f"  gunicorn ping      {_rate(ping_after, 'req/s')} (after)")
    finally:
        server.stop()
    ceiling = (ping_before["per_second"] + ping_after["per_second"]) / 2
    one, single_client = sizes[str(main_size)]["one_trip"], sizes[str(main_size)]["single_client"]
    return {
        "server": f"gunicorn sync workers={workers} on 127.0.0.1 (CONN_MAX_AGE=60)",
        "clients": clients,
        "ping_before": ping_before,
        "ping_after": ping_after,
        "ping_auth": ping_auth,
        "ping_rps": ceiling,
        "turns": turns,
        "turns_per_ping": turns["per_second"] / ceiling if ceiling else float("nan"),
        "one_trip": one,
        "single_client": single_client,
        "sizes": sizes,
        "long_conversation": long_conversation,
        "main_size": main_size,
        "one_trip_per_ping_auth": (
            one["per_second"] / ping_auth["per_second"] if ping_auth["per_second"] else float("nan")
        ),
        "cpu_per_turn_over_ping_auth": cpu_ratio(one, ping_auth),
    }


def compare_single(
    servers: dict[str, tuple[Server, list[str], str]], *, seconds: float, rounds: int, log
) -> dict:
    """The single-client one round trip on several servers (name → (server, conversations,
    token)), in alternating rounds so the machine's load hits each alike; p50 over every
    round's turns and the median of the rounds' p50s."""
    samples: dict[str, list[dict]] = {name: [] for name in servers}
    for name, (server, conversations, token) in servers.items():
        # Two threads for two seconds: every worker past its first requests.
        _drive(server, 2, 2.0, turn_one_work_factory(conversations * 2, token, f"cmp-warm-{name}"))
    for i in range(rounds):
        order = list(servers) if i % 2 == 0 else list(reversed(servers))
        for name in order:
            server, conversations, token = servers[name]
            samples[name].append(
                _drive(
                    server,
                    1,
                    seconds,
                    turn_one_work_factory(conversations, token, f"cmp-{name}-{i}"),
                )
            )
    out = {}
    for name, drives in samples.items():
        p50s = [d["p50_ms"] for d in drives]
        out[name] = {
            "rounds": len(drives),
            "units": sum(d["units"] for d in drives),
            "errors": sum(d["errors"] for d in drives),
            "error_samples": [s for d in drives for s in d["error_samples"]][:5],
            "p50_ms": statistics.median(p50s),
            "p50_min_ms": min(p50s),
            "p50_max_ms": max(p50s),
            "p99_ms": max(d["p99_ms"] for d in drives),
        }
        log(
            f"  single client on {name}: p50 {out[name]['p50_ms']:.1f} ms "
            f"(rounds {min(p50s):.1f}–{max(p50s):.1f}) errors={out[name]['errors']}"
        )
    return out


# Server connections PgBouncer keeps to PostgreSQL in the pooler phase: fewer than the
# gunicorn workers' connections to it, so their transactions share backends.
PGBOUNCER_POOL = 2


def through_pgbouncer(
    database_url: str,
    conversations: list[str],
    token: str,
    *,
    clients: int,
    workers: int,
    seconds: float,
    log,
) -> dict:
    """The one round trip + reply through PgBouncer in transaction pooling (Debian's
    `pgbouncer`, started here on loopback in front of the benchmark database): a gunicorn
    with `DATABASE_POOLER=pgbouncer` whose connections reach PostgreSQL through it, from
    `clients` threads and from one. `errors` counts both; the server CPU per request of the
    `clients` threads leaves PgBouncer's own out."""
    from .cpu import metered
    from .db import PG_DATABASE
    from .pgbouncer import PgBouncer, binary

    if binary() is None:
        log("  pgbouncer: skipped (not installed)")
        return {"skipped": "pgbouncer is not installed (Debian: apt-get install pgbouncer)"}
    bouncer = PgBouncer.for_url(database_url, pool_size=PGBOUNCER_POOL).start()
    server = Server(
        bouncer.url(),
        workers,
        env={"DATABASE_POOLER": "pgbouncer"},
        log_name="gunicorn-pgbouncer.log",
    )
    try:
        server.start()
        warm = min(2.0, seconds / 4)
        _drive(server, clients, warm, turn_one_work_factory(conversations, token, "pgb-warm"))
        work = turn_one_work_factory(conversations, token, "pgb")
        one = metered(server, PG_DATABASE, 2, lambda: _drive(server, clients, seconds, work))
        single = _drive(
            server, 1, seconds / 2, turn_one_work_factory(conversations, token, "pgb-single")
        )
        served = bouncer.stats()  # the proof that the turns went through it
    finally:
        server.stop()
        bouncer.stop()
    log(
        f"  pgbouncer one-trip {clients} clients: {one['per_second']:.1f} turns/s "
        f"p50={one['p50_ms']:.0f}ms errors={one['errors']}; 1 client p50={single['p50_ms']:.1f}ms "
        f"errors={single['errors']}; PgBouncer served {served['transactions']:,} transactions"
    )
    return {
        **one,
        "errors": one["errors"] + single["errors"],
        "error_samples": (one["error_samples"] + single["error_samples"])[:5],
        "single_client": single,
        "server": (
            f"gunicorn sync workers={workers} with DATABASE_POOLER=pgbouncer (CONN_MAX_AGE=60)"
        ),
        "pooler": f"PgBouncer, pool_mode=transaction, default_pool_size={PGBOUNCER_POOL}",
        "pool_size": PGBOUNCER_POOL,
        "served": served,
    }
