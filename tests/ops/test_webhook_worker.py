"""SPEC V4 with real processes on loopback: `manage.py events_worker` in a process of its own
delivers a scripted session's events to receivers (a `http.server` in this test) that verify
every request with the Standard Webhooks library:

- one answers every request: it gets every event, in order per user;
- one fails three times, then succeeds: the first event arrives on the fourth try, and
  every event after it, each attempt logged;
- one answers 410: it is disabled at once, with the reason, after one request;
- one hangs: no turn waits for it (the whole session is written while it holds a request)
  and the other endpoints receive everything while it still hangs; released, it catches up;
- the worker SIGKILLed in the middle of a delivery and started again loses nothing and keeps
  each user's order (the killed delivery is sent again: at least once).

PostgreSQL only (the worker shares the test database); every wait is bounded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from tests.helpers import ON_POSTGRES, stop_process

ROOT = Path(__file__).resolve().parents[2]
WAIT = 40.0  # seconds: the bound of every wait

pytestmark = [
    pytest.mark.skipif(not ON_POSTGRES, reason="needs PostgreSQL: the worker process shares the test "
                                               "database, which SQLite keeps in this process's memory"),
    pytest.mark.django_db(transaction=True),
]


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
        self.unverified: list[str] = []
        self.flaky_failures = 0
        self.release = threading.Event()  # lets the hanging path answer
        self.hanging = threading.Event()  # set while the hanging path holds a request
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                path = self.path
                try:
                    event = Webhook(receiver.secrets[path]).verify(body, dict(self.headers.items()))
                except Exception:
                    with receiver.lock:
                        receiver.unverified.append(path)
                    return self._answer(400)
                with receiver.lock:
                    receiver.received.append((path, event))
                self._answer(receiver.status_for(path))

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

    def status_for(self, path: str) -> int:
        if path == "/flaky":
            with self.lock:
                self.flaky_failures += 1
                if self.flaky_failures <= 3:
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
    def __init__(self, env: dict):
        self.env, self.proc = env, None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "events_worker", "--threads", "3", "--interval", "0.1"],
            cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_process(self.proc, timeout=15)


def worker_env() -> dict:
    from django.db import connection

    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update({
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "WEBHOOK_ALLOW_HTTP": "1", "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1",
        "WEBHOOK_TIMEOUT_SECONDS": "1", "WEBHOOK_BACKOFF_FIRST_SECONDS": "0.1",
        "WEBHOOK_BACKOFF_MAX_SECONDS": "0.4", "WEBHOOK_LEASE_MARGIN_SECONDS": "1",
        "EVENTS_WORKER_INTERVAL": "0.1", "COMPANION_LOG_LEVEL": "WARNING",
    })
    return env


@pytest.fixture
def loopback(settings):
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    receiver = Receiver()
    worker = WorkerProcess(worker_env())
    yield receiver, worker
    worker.stop()
    receiver.stop()


def register(receiver: Receiver, path: str):
    from events.webhooks import endpoint_create

    endpoint, secret = endpoint_create(url=receiver.url(path))
    receiver.secrets[path] = secret
    return endpoint


def session():
    """A scripted session of two users: turns that learn, a correction, a forget, a switch, a
    boundary, a deleted conversation."""
    from conversations.domain import Scope
    from memory import forgetting
    from memory import services as memory_services
    from policy import services as policy_services
    from tests.factories import CharacterFactory, ConversationFactory, UserFactory
    from turns import services as turn_services

    rowan = CharacterFactory(slug="rowan")
    sam, ana = UserFactory(username="sam"), UserFactory(username="ana")
    for user in (sam, ana):
        memory_services.ensure_profile(user)
    conv = ConversationFactory(user=sam, character=rowan)
    other = ConversationFactory(user=ana, character=rowan)
    turn_services.turn_create(conversation_id=conv.pk, turn_key="t1", content="My dog's name is Rex. I like jazz.")
    turn_services.turn_create(conversation_id=other.pk, turn_key="t1", content="I live in Lisbon.")
    pet = memory_services.memory_assert(user=sam, key="pet.name", value="Rex", scope=Scope("user")).record
    memory_services.memory_correct(record_id=pet.id, value="Max")
    forgetting.forget_key(user=sam, key="pet.name", scope_id="*")
    memory_services.memory_settings_set(user=ana, changed_by="api", learn=False)
    policy_services.rule_create(user=sam, capability="media.image", effect="deny", source="explicit-user",
                                scope={"kind": "global"})
    turn_services.conversation_delete(conversation_id=other.pk)


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


def test_every_event_reaches_every_endpoint_signed_in_order_despite_failures_gone_and_hanging(loopback):
    from events.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint

    receiver, worker = loopback
    ok, flaky, gone, hang = (register(receiver, p) for p in ("/ok", "/flaky", "/gone", "/hang"))
    worker.start()
    # The hanging endpoint holds a request before the session starts ...
    from memory import services as memory_services
    from tests.factories import UserFactory

    first = UserFactory(username="first")
    memory_services.memory_settings_set(user=first, changed_by="api", use=False)
    assert receiver.hanging.wait(WAIT)
    # ... and the whole session is written meanwhile: no turn waits for a delivery.
    session()
    total = Event.objects.count()
    expected = feed_order()
    # The other endpoints receive everything while the hanging one still hangs.
    wait_until(lambda: len(receiver.first_receipts("/ok")) == total, "every event at /ok")
    wait_until(lambda: len(receiver.first_receipts("/flaky")) == total, "every event at /flaky")
    # Meanwhile the hanging endpoint is still at the head of each of its lanes.
    assert len(receiver.first_receipts("/hang")) <= len(expected) < total
    assert per_user(receiver, "/ok") == expected
    assert per_user(receiver, "/flaky") == expected
    # The flaky endpoint: three failed tries of the first event, the fourth succeeded.
    first_delivery = Delivery.objects.filter(lane__endpoint=flaky).order_by("event__txid", "event_id").first()
    assert list(DeliveryAttempt.objects.filter(delivery=first_delivery).values_list("status_code", flat=True)) == [
        500, 500, 500, 200]
    assert receiver.requests("/flaky") == total + 3
    # The gone endpoint: one request, then disabled with the reason.
    gone.refresh_from_db()
    assert not gone.enabled and gone.disabled_reason == "The endpoint answered 410 Gone."
    assert receiver.requests("/gone") == 1
    # Released, the hanging endpoint catches up, in order (its timed-out tries were repeated).
    receiver.release.set()
    wait_until(lambda: len(receiver.first_receipts("/hang")) == total, "every event at /hang")
    assert per_user(receiver, "/hang") == expected
    assert DeliveryAttempt.objects.filter(delivery__lane__endpoint=hang, error="Timed out.").exists()
    assert receiver.unverified == []
    assert WebhookEndpoint.objects.filter(enabled=True).count() == 3
    wait_until(lambda: not Delivery.objects.filter(lane__endpoint__enabled=True, status="pending").exists(),
               "no pending delivery")
    # Nothing private in transit: no value, message content or key in any delivered event.
    sent = json.dumps([event for _, event in receiver.received])
    for word in ("Rex", "jazz", "Lisbon", "Max", "pet.name", "dog"):
        assert word not in sent


def test_a_worker_killed_mid_delivery_loses_nothing_and_keeps_each_users_order(loopback):
    from events.models import Event

    receiver, worker = loopback
    register(receiver, "/hang")
    worker.start()
    session()
    assert receiver.hanging.wait(WAIT)  # a delivery is in the middle of its request
    held = receiver.first_receipts("/hang")[-1]
    worker.kill()
    receiver.release.set()  # the killed worker's request gets its answer into a closed socket
    worker.start()  # a new worker takes the lane up once the dead one's lease has ended
    total = Event.objects.count()
    wait_until(lambda: len(receiver.first_receipts("/hang")) == total, "every event after the restart")
    assert per_user(receiver, "/hang") == feed_order()
    with receiver.lock:
        assert sum(1 for p, event in receiver.received if event["id"] == held) >= 2  # sent again
    assert receiver.unverified == []
