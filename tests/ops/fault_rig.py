"""The pieces of the fault suite (test_fault_suite.py) that the test controls: a Redis server of
its own, a loopback TCP proxy in front of PostgreSQL that can cut the database away, gunicorn
with the repository's configuration, and the runtime's clients, which retry every failed
request with the same keys until it succeeds."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.helpers import children, stop_process

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_settings() -> dict:
    from django.db import connection

    return connection.settings_dict


class Redis:
    def __init__(self, workdir: Path):
        self.port, self.workdir, self.proc = free_port(), workdir, None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=10)

    def freeze(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.proc.send_signal(signal.SIGCONT)


class Proxy:
    """A loopback TCP proxy to PostgreSQL. `cut()` closes every connection and refuses new
    ones (as a database that went away); `restore()` lets them through again."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(256)
        self.port = self.server.getsockname()[1]
        self.cut_off, self.stopped = False, False
        self.lock = threading.Lock()
        self.live: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self.cut_off:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.live |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                self._close(s)

    def _close(self, s: socket.socket) -> None:
        with self.lock:
            self.live.discard(s)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def cut(self) -> None:
        self.cut_off = True
        with self.lock:
            live = list(self.live)
        for s in live:
            self._close(s)

    def restore(self) -> None:
        self.cut_off = False

    def close(self) -> None:
        self.stopped = True
        self.cut()
        self.server.close()


class Gunicorn:
    def __init__(self, database_url: str, cache_url: str, log_path: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("THROTTLE_", "PROMETHEUS_", "GUNICORN_", "API_TOKEN_", "CACHE_"))
            and k not in ("WEB_CONCURRENCY", "DJANGO_SETTINGS_MODULE")
        }
        env.update(
            {
                "DATABASE_URL": database_url,
                "CACHE_URL": cache_url,
                "DJANGO_DEBUG": "false",
                "DJANGO_ENV": "development",
                "SECRET_KEY": "fault-suite-" + "k" * 40,
                "ALLOWED_HOSTS": "127.0.0.1",
                "DB_CONNECT_TIMEOUT": "2",
            }
        )
        self.log = open(log_path, "w")  # noqa: SIM115
        self.log_path = log_path
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--workers",
                "4",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--timeout",
                "30",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log_path.read_text()[-3000:]
            status, _, _ = get(self.port, "/readyz", timeout=2)
            if status == 200 and len(children(self.proc.pid)) == 4:
                return
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not become ready: " + self.log_path.read_text()[-3000:])

    def workers(self) -> list[int]:
        return children(self.proc.pid)

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


def get(port: int, path: str, timeout: float = 2.0) -> tuple[int | None, dict, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        status = response.status
    except (OSError, http.client.HTTPException):
        return None, {}, (time.perf_counter() - started) * 1000
    finally:
        conn.close()
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = {}
    return status, data, (time.perf_counter() - started) * 1000


class Runtime:
    """One chat runtime's connection: every request retried with the same keys until it is
    answered 2xx (SPEC §12 O5: a 503 and a lost connection are both safe to retry)."""

    def __init__(self, port: int, token: str, record):
        self.port, self.token, self.record = port, token, record
        self.conn: http.client.HTTPConnection | None = None

    def _once(self, method: str, path: str, body) -> tuple[int | None, str, bytes]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            self.conn.request(
                method,
                "/api/v1" + path,
                body=json.dumps(body).encode(),
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                },
            )
            response = self.conn.getresponse()
            data = response.read()
            return response.status, response.getheader("Content-Type", ""), data
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            return None, "", b""

    def call(self, method: str, path: str, body, deadline: float) -> dict | None:
        while time.monotonic() < deadline:
            status, ctype, data = self._once(method, path, body)
            if status is not None and 200 <= status < 300:
                return json.loads(data)
            self.record(status, ctype, data)
            if status is not None and status not in (503,):
                return None  # not a fault to retry: the record says what it was
            time.sleep(0.05)
        return None
