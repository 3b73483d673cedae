"""SPEC §12 O4: sign-in lockout and API throttles count across every worker and machine.

Two gunicorn servers (one worker each, as two machines behind a load balancer would be) on
the same PostgreSQL database take turns answering one client: the sign-in lockout (django-
axes) and the API throttle must hold across them — with the default database cache, and with
Redis (`CACHE_URL=redis://…`). A per-process cache is the control: there the counts split and
neither holds, which is what the system check warns about. Then one server with two workers
serves `/metrics` summed over both (prometheus-client's multiprocess mode).

PostgreSQL only: the test database of SQLite lives in the test process's memory, so no
server process could share it. The Redis case needs a Redis server on 127.0.0.1:6379 (`.ci/run`
starts Debian's redis-server when it is not running) and says so when it skips."""

from __future__ import annotations

import http.cookiejar
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import ON_POSTGRES, redis_reachable, stop_process

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
PORTS = (8131, 8132, 8133)
LIMIT = 3  # failed sign-ins before the lockout; API requests per minute

pytestmark = [
    pytest.mark.skipif(
        not ON_POSTGRES,
        reason="needs PostgreSQL: the gunicorn processes share the test database, "
        "which SQLite keeps in the test process's memory",
    ),
    pytest.mark.django_db(transaction=True),
]


def database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    user = urllib.parse.quote(s["USER"] or "postgres")
    password = f":{urllib.parse.quote(s['PASSWORD'])}" if s.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Server:
    def __init__(self, port: int, cache_url: str | None, workers: int = 1, **extra_env):
        self.port, self.base = port, f"http://127.0.0.1:{port}"
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PROMETHEUS_MULTIPROC_DIR", "CACHE_URL") and not k.startswith("THROTTLE_")
        }
        env.update(
            {
                "DATABASE_URL": database_url(),
                "DJANGO_DEBUG": "false",
                "DJANGO_ENV": "development",
                "SECRET_KEY": "shared-counters-" + "k" * 40,
                "ALLOWED_HOSTS": "127.0.0.1",
                "AXES_FAILURE_LIMIT": str(LIMIT),
                "THROTTLE_TOKEN": f"{LIMIT}/min",
                "CONN_MAX_AGE": "0",
            }
        )
        if cache_url:
            env["CACHE_URL"] = cache_url
        env.update(extra_env)
        self.log = tempfile.NamedTemporaryFile(
            "w", prefix=f"gunicorn-{port}-", suffix=".log", delete=False
        )  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--workers",
                str(workers),
                "--bind",
                f"127.0.0.1:{port}",
                "--timeout",
                "60",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn on {self.port} exited; see {self.log.name}")
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"gunicorn on {self.port} did not become ready")

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


@pytest.fixture
def servers(request):
    started: list[Server] = []

    def start(cache_url: str | None, count: int = 2, workers: int = 1, **extra_env) -> list[Server]:
        for port in PORTS[:count]:
            started.append(Server(port, cache_url, workers, **extra_env))
        for server in started:
            server.wait()
        return started

    yield start
    for server in started:
        server.stop()


def empty_shared_caches() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM companion_cache")
    if redis_reachable():
        import redis

        redis.Redis.from_url(REDIS_URL).flushdb()


def sign_in_failures(servers: list[Server]) -> list[int]:
    """LIMIT failed sign-ins of one username from one address, the servers taking turns."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    codes = []
    for i in range(LIMIT):
        server = servers[i % len(servers)]
        with opener.open(server.base + "/login/", timeout=10) as r:
            token = re.search(
                r'name="csrfmiddlewaretoken" value="([^"]+)"', r.read().decode()
            ).group(1)
        data = urllib.parse.urlencode(
            {"username": "target", "password": "wrong", "csrfmiddlewaretoken": token}
        )
        try:
            with opener.open(server.base + "/login/", data=data.encode(), timeout=10) as r:
                codes.append(r.status)
        except urllib.error.HTTPError as e:
            codes.append(e.code)
    return codes


def api_calls(servers: list[Server], token: str) -> list[int]:
    """LIMIT + 1 API requests of one token, the servers taking turns (the capability list acts
    for no user: the token's guard counts it, SPEC §12 O7)."""
    codes = []
    for i in range(LIMIT + 1):
        req = urllib.request.Request(
            servers[i % len(servers)].base + "/api/v1/policy/capabilities",
            headers={"Authorization": f"Bearer {token}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                codes.append(r.status)
        except urllib.error.HTTPError as e:
            codes.append(e.code)
    return codes


@pytest.fixture
def people():
    from config.models import ApiToken
    from tests.factories import UserFactory

    UserFactory(username="target")
    empty_shared_caches()
    _, token = ApiToken.issue("shared-counters")
    yield token
    empty_shared_caches()


CASES = [
    pytest.param(None, True, id="database cache (the default)"),
    pytest.param(
        REDIS_URL,
        True,
        id="redis",
        marks=pytest.mark.skipif(
            not redis_reachable(),
            reason="no Redis server on 127.0.0.1:6379 (.ci/run starts Debian's redis-server)",
        ),
    ),
    pytest.param("locmemcache://", False, id="per-process cache (control)"),
]


@pytest.mark.parametrize(("cache_url", "shared"), CASES)
def test_it_counts_sign_in_failures_and_throttles_across_processes(
    servers, people, cache_url, shared
):
    running = servers(cache_url)
    failures = sign_in_failures(running)
    calls = api_calls(running, people)
    if shared:
        assert failures == [200] * (LIMIT - 1) + [429], (
            failures
        )  # locked out on the LIMIT-th failure
        assert calls == [200] * LIMIT + [429], calls
    else:
        assert failures == [200] * LIMIT, failures  # each process counted only its own
        assert calls == [200] * (LIMIT + 1), calls


def get_concurrently(server: Server, path: str, n: int) -> None:
    """n requests on n connections opened at once: a sync worker holds the first connection
    until its request arrives, so another worker takes the next one."""
    sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(n)]
    time.sleep(0.2)
    for s in sockets:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    for s in sockets:
        with s:
            assert s.makefile("rb").readline().split()[1] == b"200"


def test_it_sums_metrics_over_every_worker(servers, people, tmp_path):
    """One server, two workers: /metrics answers for the requests of both (multiprocess mode)."""
    (server,) = servers(None, count=1, workers=2, PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
    rounds = 10
    for _ in range(rounds):
        get_concurrently(server, "/healthz", 2)
    pids = {p.stem.rsplit("_", 1)[-1] for p in tmp_path.glob("counter_*.db")}
    assert len(pids) == 2, pids  # both workers answered
    req = urllib.request.Request(
        server.base + "/metrics", headers={"Authorization": f"Bearer {people}"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    counted = sum(
        float(m.group(1))
        for m in re.finditer(
            r'^companion_http_requests_total\{[^}]*route="healthz"[^}]*\} (\S+)$', text, re.M
        )
    )
    assert counted == 2 * rounds
