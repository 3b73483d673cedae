"""The pieces of the webhook proofs (SPEC V4) that start real processes on loopback: a
receiver that verifies every request with the Standard Webhooks library, the events worker
as a process, and the orders to compare. Used by test_webhook_worker.py and the fault suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from standardwebhooks.webhooks import Webhook

from tests.helpers import stop_process

ROOT = Path(__file__).resolve().parents[2]
WAIT = 40.0  # seconds: the bound of every wait


def wait_while_progressing(
    count, target: int, what: str, *, stall: float = WAIT, cap: float = 600.0
) -> None:
    """Wait until `count()` reaches `target`, for as long as it keeps growing: fail when it
    stands still for `stall` seconds (something stalled) or at `cap` (a bound on the test)."""
    deadline, last, moved = time.monotonic() + cap, -1, time.monotonic()
    while True:
        now_count = count()
        if now_count >= target:
            return
        now = time.monotonic()
        if now_count != last:
            last, moved = now_count, now
        if now - moved > stall or now > deadline:
            raise AssertionError(
                f"{what}: {now_count} of {target}, no progress for {now - moved:.0f} s"
            )
        time.sleep(0.1)


def wait_until(predicate, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Receiver:
    """A loopback HTTP server; each path behaves as its test needs, and every request is
    verified with the endpoint's secret by the Standard Webhooks library."""

    def __init__(self):
        self.secrets: dict[str, str] = {}
        self.received: list[tuple[str, dict]] = []  # (path, verified event), in arrival order
        self.unverified: list[str] = []  # whole requests whose signature did not verify
        self.cut_off: list[str] = []  # requests whose sender died before the body ended
        self.flaky_failures = 0
        self.flaky_event: str | None = None
        self.release = threading.Event()  # lets the hanging path answer
        self.hanging = threading.Event()  # set while the hanging path holds a request
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers["content-length"])
                body = self.rfile.read(length)
                path = self.path
                if len(body) < length:  # a killed worker's request, cut off mid-body
                    with receiver.lock:
                        receiver.cut_off.append(path)
                    return
                try:
                    event = Webhook(receiver.secrets[path]).verify(body, dict(self.headers.items()))
                except Exception:
                    with receiver.lock:
                        receiver.unverified.append(path)
                    return self._answer(400)
                with receiver.lock:
                    receiver.received.append((path, event))
                self._answer(receiver.status_for(path, event["id"]))

            def _answer(self, status):
                try:
                    self.send_response(status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the worker gave up on this request (a timeout)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def status_for(self, path: str, event_id: str) -> int:
        if path == "/flaky":  # the first event it is sent fails three times, then succeeds
            with self.lock:
                self.flaky_event = self.flaky_event or event_id
                if event_id == self.flaky_event and self.flaky_failures < 3:
                    self.flaky_failures += 1
                    return 500
        if path == "/gone":
            return 410
        if path == "/hang":
            self.hanging.set()
            self.release.wait(WAIT)
        return 200

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def first_receipts(self, path: str) -> list[str]:
        """The ids `path` received, each once, in the order of first arrival."""
        with self.lock:
            seen, order = set(), []
            for p, event in self.received:
                if p == path and event["id"] not in seen:
                    seen.add(event["id"])
                    order.append(event["id"])
            return order

    def requests(self, path: str) -> int:
        with self.lock:
            return sum(1 for p, _ in self.received if p == path)

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class WorkerProcess:
    def __init__(self, env: dict, *, threads: int = 3, interval: float = 0.1):
        self.env, self.proc = env, None
        self.args = ["--threads", str(threads), "--interval", str(interval)]

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "events_worker", *self.args],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_process(self.proc, timeout=15)


def worker_env(database_url: str | None = None) -> dict:
    from django.db import connection

    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DATABASE_URL": database_url
            or f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "WEBHOOK_ALLOW_HTTP": "1",
            "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1",
            "WEBHOOK_TIMEOUT_SECONDS": "1",
            "WEBHOOK_BACKOFF_FIRST_SECONDS": "0.1",
            "WEBHOOK_BACKOFF_MAX_SECONDS": "0.4",
            "WEBHOOK_LEASE_MARGIN_SECONDS": "1",
            "EVENTS_WORKER_INTERVAL": "0.1",
            "COMPANION_LOG_LEVEL": "WARNING",
        }
    )
    return env


def register(receiver: Receiver, path: str):
    from events.webhooks import endpoint_create

    endpoint, secret = endpoint_create(url=receiver.url(path))
    receiver.secrets[path] = secret
    return endpoint


def feed_order() -> dict[str, list[str]]:
    from events.models import Event

    order: dict[str, list[str]] = {}
    for pk, user in Event.objects.order_by("txid", "id").values_list("id", "user_ref"):
        order.setdefault(user, []).append(f"evt_{pk}")
    return order


def per_user(receiver: Receiver, path: str) -> dict[str, list[str]]:
    with receiver.lock:
        users = {event["id"]: event["user"] for p, event in receiver.received if p == path}
    order: dict[str, list[str]] = {}
    for event_id in receiver.first_receipts(path):
        order.setdefault(users[event_id], []).append(event_id)
    return order
