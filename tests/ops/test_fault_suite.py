"""Faults degrade, never stall (SPEC §12 O5, O6, O7; the invariants of I1, I4, W1, W2, §7).

gunicorn (4 workers, the repository's gunicorn.conf.py) on PostgreSQL, with a Redis server of
its own as the shared cache and a loopback TCP proxy in front of PostgreSQL that the test
controls. Eight runtime clients create turns (every third with `plan`), commit replies and
assert memories with idempotency keys, retrying every failed request — a 503, a lost
connection — with the same keys until it succeeds. Meanwhile: workers are SIGKILLed, Redis is
stopped and started, Redis is frozen (SIGSTOP: its connections stay open), and the database is
cut away through the proxy (every connection closed, every new one refused); the shared
cluster itself is never touched. A prober asks `/healthz` all along.

Then: every operation was acknowledged; every error the clients saw was a problem+json 503 —
no 500, no 429 on the default throttles; `/healthz` answered every probe not in flight during
the worker kills (and, with FAULT_SUITE_TIMING=1, its p99 within 50 ms while Redis was frozen
and while the database was cut); `/readyz` said `cache: degraded` (200) and `database: down`
(503) at those times; the outages were logged once per episode, not per request; and the
database holds one turn per key, one reply per turn, no orphan message, unique gap-free `seq`,
unique gap-free memory versions and one idempotency row per acknowledged key.

The events worker (SPEC V3) runs all along through the same proxy, delivering every event to a
receiver here that verifies each request with the Standard Webhooks library; it is SIGKILLed
and started again with the gunicorn workers, and sees the database cuts. Every event of the
session reaches the receiver, in each user's order (V4).

Last, the backup drill: `pg_dump` of the database, restored into a new database, where every
user's export is identical.

PostgreSQL only (the servers share the test database; SQLite keeps it in this process's
memory); needs `redis-server`, `pg_dump`, `pg_restore`; loopback only; about a minute. The
servers, the proxy and the clients are in fault_rig.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest

from tests.helpers import ON_POSTGRES
from tests.ops.fault_rig import Gunicorn, Proxy, Redis, Runtime, database_settings, get
from tests.ops.webhook_rig import (
    Receiver,
    WorkerProcess,
    feed_order,
    per_user,
    register,
    wait_while_progressing,
    worker_env,
)

ROOT = Path(__file__).resolve().parents[2]

CLIENTS = 8

NAMES = ("Rex", "Max", "Biscuit", "Juniper", "Pepper", "Maple", "Olive", "Ember")

TEXTS = (
    "My dog's name is {name}.",
    "How was your day? The rain kept me inside.",
    "I like green tea.",
    "Actually, my dog's name is {name}.",
    "I live in Lisbon.",
)

HEALTH_P99_MS = 50.0

# The /healthz latency target (p99 ≤ 50 ms while Redis is frozen and while the database is
# cut) is asserted with FAULT_SUITE_TIMING=1, on a machine that runs nothing else; otherwise
# the figures are printed (`-s`) and only "it always answered" is asserted.
TIMING = os.environ.get("FAULT_SUITE_TIMING") == "1"
PROBE_TIMEOUT = 10.0

pytestmark = [
    pytest.mark.skipif(
        not ON_POSTGRES,
        reason="needs PostgreSQL: the gunicorn workers share the test "
        "database, which SQLite keeps in this process's memory",
    ),
    pytest.mark.skipif(
        not shutil.which("redis-server"), reason="needs redis-server (Debian's redis-server)"
    ),
    pytest.mark.skipif(
        not (shutil.which("pg_dump") and shutil.which("pg_restore")),
        reason="needs pg_dump and pg_restore (postgresql-client)",
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def rig(tmp_path, settings):
    from config.models import ApiToken

    s = database_settings()
    redis = Redis(tmp_path)
    redis.start()
    proxy = Proxy((s["HOST"] or "127.0.0.1", int(s["PORT"] or 5432)))
    user = urllib.parse.quote(s["USER"] or "postgres")
    password = f":{urllib.parse.quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    database_url = f"postgres://{user}{password}@127.0.0.1:{proxy.port}/{s['NAME']}"
    server = Gunicorn(database_url, f"redis://127.0.0.1:{redis.port}/0", tmp_path / "gunicorn.log")
    _, token = ApiToken.issue("fault-suite")
    # SPEC V4: the events worker runs through the same cut-able proxy, to a receiver here.
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    receiver = Receiver()
    register(receiver, "/ok")
    worker = WorkerProcess(
        worker_env(database_url), threads=2, interval=0.5
    )  # light beside gunicorn
    try:
        server.wait_ready()
        worker.start()
        yield server, redis, proxy, token, (receiver, worker)
    finally:
        worker.stop()
        receiver.stop()
        server.stop()
        redis.stop()
        proxy.close()


def phase_of(phases: list[tuple[float, str]], at: float) -> str:
    name = "warm"
    for started, label in phases:
        if at >= started:
            name = label
    return name


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


def test_it_degrades_under_faults_and_never_breaks_an_invariant(rig):
    server, redis, proxy, token, (receiver, events_worker) = rig
    setup = Runtime(server.port, token, lambda *a: None)
    far = time.monotonic() + 30
    assert setup.call("PUT", "/characters/rowan", {"name": "Rowan"}, far) is not None
    conversations = []
    for i in range(CLIENTS):
        assert setup.call("PUT", f"/users/fault-{i}", {}, far) is not None
        body = setup.call(
            "POST", "/conversations", {"user": f"fault-{i}", "character": "rowan"}, far
        )
        conversations.append(body["id"])

    errors: list[tuple[int | None, str, bytes]] = []
    errors_lock = threading.Lock()

    def record(status, ctype, data):
        with errors_lock:
            errors.append((status, ctype, data[:2000]))

    stop = threading.Event()
    acknowledged = {i: {"turns": [], "replies": [], "asserts": []} for i in range(CLIENTS)}
    failures: list[str] = []

    def client(i: int) -> None:
        runtime = Runtime(server.port, token, record)
        n = 0
        while not stop.is_set():
            deadline = time.monotonic() + 30
            key = f"c{i}-t{n}"
            body = {
                "turn_key": key,
                "content": TEXTS[n % len(TEXTS)].format(name=NAMES[(n + i) % len(NAMES)]),
            }
            if n % 3 == 0:
                body["plan"] = {"budget": 4000, "capabilities": ["tone.playful"]}
            turn = runtime.call("POST", f"/conversations/{conversations[i]}/turns", body, deadline)
            if turn is None:
                failures.append(f"turn {key}")
                return
            acknowledged[i]["turns"].append((key, turn["id"]))
            reply = runtime.call(
                "POST", f"/turns/{turn['id']}/reply", {"content": f"Noted {key}."}, deadline
            )
            if reply is None:
                failures.append(f"reply {key}")
                return
            acknowledged[i]["replies"].append(turn["id"])
            if n % 2 == 1:
                idem = f"c{i}-m{n}"
                done = runtime.call(
                    "POST",
                    "/memories",
                    {
                        "user": f"fault-{i}",
                        "key": "user.likes",
                        "value": f"tea {n}",
                        "scope": {"kind": "user"},
                        "authority": "user-confirmed",
                        "idempotency_key": idem,
                    },
                    deadline,
                )
                if done is None:
                    failures.append(f"assert {idem}")
                    return
                acknowledged[i]["asserts"].append(idem)
            n += 1

    health: list[tuple[float, int | None, float]] = []
    readiness: dict[str, list] = {}
    phases: list[tuple[float, str]] = []

    def prober() -> None:
        while not stop.is_set():
            at = time.monotonic()
            # "It answers", not "it answers fast" (that is the timing target above): a probe
            # waits up to 10 s, so a machine busy with other work does not read as no answer.
            status, _, ms = get(server.port, "/healthz", timeout=PROBE_TIMEOUT)
            health.append((at, status, ms))
            time.sleep(0.02)

    def ready(label: str) -> None:
        status, body, _ = get(server.port, "/readyz", timeout=5)
        readiness.setdefault(label, []).append((status, body))

    def phase(label: str) -> None:
        phases.append((time.monotonic(), label))

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        time.sleep(2)  # every worker warm (its first turns), then the prober starts
        threads.append(threading.Thread(target=prober, daemon=True))
        threads[-1].start()
        time.sleep(0.5)
        phase("worker kills")
        events_worker.kill()  # the events worker too, mid-work, then started again
        events_worker.start()
        for _ in range(4):
            workers = server.workers()
            if workers:
                os.kill(workers[0], signal.SIGKILL)
            time.sleep(1.0)
        phase("calm")
        time.sleep(1.5)
        phase("redis stopped")
        redis.stop()
        time.sleep(1.0)
        ready("redis stopped")
        time.sleep(3.0)
        redis.start()
        phase("calm")
        time.sleep(1.5)
        phase("redis frozen")
        redis.freeze()
        time.sleep(1.0)
        ready("redis frozen")
        time.sleep(5.0)
        redis.thaw()
        phase("calm")
        time.sleep(1.5)
        for _ in range(2):
            phase("database cut")
            proxy.cut()
            time.sleep(1.0)
            ready("database cut")
            time.sleep(3.0)
            proxy.restore()
            phase("calm")
            time.sleep(2.0)
        ready("after")
    finally:
        stop.set()
        proxy.restore()
        redis.thaw()
        for t in threads:
            t.join(timeout=60)

    # The clients: every operation acknowledged, every error a 503 problem (no 500, no 429).
    assert not failures, (failures, errors[-5:])
    statuses = {status for status, _, _ in errors if status is not None}
    assert statuses <= {503}, [e for e in errors if e[0] not in (None, 503)][:5]
    assert all(
        ctype == "application/problem+json" and json.loads(data)["code"] == "unavailable"
        for status, ctype, data in errors
        if status == 503
    )
    turns_done = sum(len(a["turns"]) for a in acknowledged.values())
    assert turns_done >= CLIENTS * 3, turns_done

    # Health and readiness.
    by_phase: dict[str, list[float]] = {}
    unanswered = []
    for at, status, ms in health:
        label = phase_of(phases, at)
        if status != 200:
            # A probe is dropped by a kill it was in flight for: it started or ended among the
            # kills (one sent just before the first kill ends inside them).
            ended = phase_of(phases, at + ms / 1000)
            unanswered.append(((label, ended), round(at - phases[0][0], 2), status, ms))
        by_phase.setdefault(label, []).append(ms)
    print(
        {label: (len(v), round(p99(v), 1), round(max(v), 1)) for label, v in by_phase.items()},
        "refused:",
        sum(1 for e in errors if e[0] == 503),
        "lost:",
        sum(1 for e in errors if e[0] is None),
        "turns:",
        turns_done,
        "unanswered:",
        unanswered,
    )
    # A SIGKILLed worker drops the connections it held (a client retries them); anywhere
    # else /healthz always answers.
    assert all("worker kills" in span for span, *_ in unanswered), unanswered
    for label in ("redis frozen", "database cut"):
        assert by_phase.get(label), by_phase.keys()
        if TIMING:  # speed is the benchmark's to judge: a shared CI machine opts out
            assert p99(by_phase[label]) <= HEALTH_P99_MS, (
                label,
                p99(by_phase[label]),
                len(by_phase[label]),
            )
    for label in ("redis stopped", "redis frozen"):
        status, body = readiness[label][0]
        assert (status, body.get("cache"), body.get("database")) == (200, "degraded", "ok"), body
    status, body = readiness["database cut"][0]
    assert (status, body.get("database")) == (503, "down"), body
    status, body = readiness["after"][0]
    assert status == 200 and body["database"] == "ok", body

    # One line per outage episode and process, never one per request; no unhandled error.
    log = server.log_path.read_text()
    assert "unhandled_exception" not in log, log[-3000:]
    refused = sum(1 for status, _, _ in errors if status == 503)
    episodes = log.count("database_unavailable")
    assert episodes <= 2 * 4, episodes  # at most once per cut and worker
    assert log.count("database_recovered") <= episodes
    assert refused <= 2 * 4 or episodes < refused, (episodes, refused)

    assert_invariants(acknowledged)
    # SPEC V4: every event of the session reached the receiver, signed, in each user's order,
    # through worker kills and database cuts.
    # Delivery goes on at the worker's pace (slower on a loaded machine): wait while it moves.
    total = sum(map(len, feed_order().values()))
    wait_while_progressing(
        lambda: len(receiver.first_receipts("/ok")), total, "events at the receiver"
    )
    assert per_user(receiver, "/ok") == feed_order() and receiver.unverified == []
    backup_drill()


def assert_invariants(acknowledged: dict) -> None:
    from django.db.models import Count, Max, Min

    from conversations.models import Message, Turn
    from memory.models import IdempotencyRecord, MemoryRecord

    keys = {key for a in acknowledged.values() for key, _ in a["turns"]}
    turns = list(
        Turn.objects.values(
            "id", "turn_key", "reply_message_id", "user_message_id", "conversation_id"
        )
    )
    # One turn per key, and a turn for every acknowledged key only.
    assert sorted(t["turn_key"] for t in turns) == sorted(keys)
    replied = {str(t) for a in acknowledged.values() for t in a["replies"]}
    # One reply per turn: every acknowledged reply is the turn's one reply message.
    assert all(t["reply_message_id"] is not None for t in turns if str(t["id"]) in replied)
    assert (
        not Message.objects.filter(role="assistant")
        .exclude(pk__in=[t["reply_message_id"] for t in turns if t["reply_message_id"]])
        .exists()
    )
    # No orphan message: each is a turn's user message or its reply.
    linked = {t["user_message_id"] for t in turns} | {
        t["reply_message_id"] for t in turns if t["reply_message_id"]
    }
    assert set(Message.objects.values_list("id", flat=True)) == linked
    # Unique, gap-free seq per conversation.
    for row in Message.objects.values("conversation_id").annotate(
        n=Count("id"), lo=Min("seq"), hi=Max("seq"), distinct=Count("seq", distinct=True)
    ):
        assert row["lo"] == 1 and row["hi"] == row["n"] == row["distinct"], row
    # Unique, gap-free memory versions per slot.
    for row in MemoryRecord.objects.values("user_id", "scope_id", "key").annotate(
        n=Count("id"),
        lo=Min("version"),
        hi=Max("version"),
        distinct=Count("version", distinct=True),
    ):
        assert row["lo"] == 1 and row["hi"] == row["n"] == row["distinct"], row
    # One idempotency row per acknowledged key.
    idem = sorted(k for a in acknowledged.values() for k in a["asserts"])
    assert sorted(IdempotencyRecord.objects.values_list("key", flat=True)) == idem


EXPORT = (
    "import django, json; django.setup();"
    "from django.contrib.auth import get_user_model; from turns.portability import user_export;"
    "out = {u.username: user_export(user=u) for u in "
    "get_user_model().objects.order_by('username')};"
    "[e.pop('exported_at') for e in out.values()];"
    "print(json.dumps(out, sort_keys=True, default=str))"
)


def export_all(database_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env.update(
        {
            "DATABASE_URL": database_url,
            "CACHE_URL": "locmemcache://",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    result = subprocess.run(
        [sys.executable, "-c", EXPORT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def backup_drill() -> None:
    """pg_dump, restore into a new database, compare every user's export."""
    s = database_settings()
    host, port, user = s["HOST"] or "127.0.0.1", str(s["PORT"] or 5432), s["USER"] or "postgres"
    env = {**os.environ, **({"PGPASSWORD": s["PASSWORD"]} if s.get("PASSWORD") else {})}
    restored = f"{s['NAME']}_restore_{uuid.uuid4().hex[:8]}"
    auth = f"{urllib.parse.quote(user)}" + (
        f":{urllib.parse.quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    )
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "backup.dump"
        subprocess.run(
            ["pg_dump", "-h", host, "-p", port, "-U", user, "-Fc", "-f", str(dump), s["NAME"]],
            env=env,
            check=True,
            timeout=120,
        )
        subprocess.run(
            [
                "psql",
                "-h",
                host,
                "-p",
                port,
                "-U",
                user,
                "-d",
                "postgres",
                "-qc",
                f'CREATE DATABASE "{restored}"',
            ],
            env=env,
            check=True,
            timeout=60,
        )
        try:
            subprocess.run(
                [
                    "pg_restore",
                    "-h",
                    host,
                    "-p",
                    port,
                    "-U",
                    user,
                    "-d",
                    restored,
                    "--no-owner",
                    "--exit-on-error",
                    str(dump),
                ],
                env=env,
                check=True,
                timeout=120,
            )
            original = export_all(f"postgres://{auth}@{host}:{port}/{s['NAME']}")
            copy = export_all(f"postgres://{auth}@{host}:{port}/{restored}")
        finally:
            subprocess.run(
                [
                    "psql",
                    "-h",
                    host,
                    "-p",
                    port,
                    "-U",
                    user,
                    "-d",
                    "postgres",
                    "-qc",
                    f'DROP DATABASE IF EXISTS "{restored}"',
                ],
                env=env,
                timeout=60,
            )
    assert len(original) >= CLIENTS and copy == original
