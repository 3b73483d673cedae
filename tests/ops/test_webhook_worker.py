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
  each user's order (the killed delivery is sent again: at least once);
- the worker's metrics (README, operations) count what it did, scraped from its port.

PostgreSQL only (the worker shares the test database); every wait is bounded."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from tests.helpers import ON_POSTGRES
from tests.ops.webhook_rig import (
    WAIT,
    Receiver,
    WorkerProcess,
    feed_order,
    per_user,
    register,
    wait_until,
    worker_env,
)

pytestmark = [
    pytest.mark.skipif(
        not ON_POSTGRES,
        reason="needs PostgreSQL: the worker process shares the test "
        "database, which SQLite keeps in this process's memory",
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def loopback(settings):
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    receiver = Receiver()
    # The hanging endpoint has a lane per user (first, sam and ana), and each of its tries holds
    # a thread until the worker's timeout: five threads leave two for the other endpoints.
    worker = WorkerProcess(worker_env(), threads=5)
    yield receiver, worker
    worker.stop()
    receiver.stop()


def session():
    """A scripted session of two users: turns that learn, a correction, a forget, a switch, a
    boundary, a deleted conversation."""
    from conversations.scopes import Scope
    from conversations.services import conversation_delete
    from memory import forgetting
    from memory import services as memory_services
    from policy import services as policy_services
    from tests.factories import CharacterFactory, ConversationFactory, UserFactory
    from turns.creation import turn_create

    rowan = CharacterFactory(slug="rowan")
    sam, ana = UserFactory(username="sam"), UserFactory(username="ana")
    for user in (sam, ana):
        memory_services.ensure_profile(user)
    conv = ConversationFactory(user=sam, character=rowan)
    other = ConversationFactory(user=ana, character=rowan)
    turn_create(
        conversation_id=conv.pk, turn_key="t1", content="My dog's name is Rex. I like jazz."
    )
    turn_create(conversation_id=other.pk, turn_key="t1", content="I live in Lisbon.")
    pet = memory_services.memory_assert(
        user=sam, key="pet.name", value="Rex", scope=Scope("user")
    ).record
    memory_services.memory_correct(record_id=pet.id, value="Max")
    forgetting.forget_key(user=sam, key="pet.name", scope_id="*")
    memory_services.memory_settings_set(user=ana, changed_by="api", learn=False)
    policy_services.rule_create(
        user=sam,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    conversation_delete(conversation_id=other.pk)


def test_it_delivers_every_event_signed_in_order_despite_failures_gone_and_hanging(
    loopback,
):
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
    # The flaky endpoint: three failed tries of the first event it was sent, the fourth succeeded
    # (the worker records an attempt after its answer arrives, so the rows are read once nothing
    # is pending).
    wait_until(
        lambda: (
            not Delivery.objects.filter(lane__endpoint__in=(ok, flaky), status="pending").exists()
        ),
        "nothing pending at /ok and /flaky",
    )
    failed = int(receiver.flaky_event.removeprefix("evt_"))
    first_delivery = Delivery.objects.get(lane__endpoint=flaky, event_id=failed)
    assert list(
        DeliveryAttempt.objects.filter(delivery=first_delivery).values_list(
            "status_code", flat=True
        )
    ) == [500, 500, 500, 200]
    assert receiver.requests("/flaky") == total + 3
    # The gone endpoint: one request, then disabled with the reason.
    gone.refresh_from_db()
    assert not gone.enabled and gone.disabled_reason == "The endpoint answered 410 Gone."
    assert receiver.requests("/gone") == 1
    # The worker gives up on the held request at its timeout and records it ...
    wait_until(
        lambda: DeliveryAttempt.objects.filter(
            delivery__lane__endpoint=hang, error="Timed out."
        ).exists(),
        "a timed-out try at /hang",
    )
    # ... and, released, the hanging endpoint catches up, in order (its timed-out tries repeated).
    receiver.release.set()
    wait_until(lambda: len(receiver.first_receipts("/hang")) == total, "every event at /hang")
    assert per_user(receiver, "/hang") == expected
    assert receiver.unverified == []
    assert WebhookEndpoint.objects.filter(enabled=True).count() == 3
    wait_until(
        lambda: (
            not Delivery.objects.filter(lane__endpoint__enabled=True, status="pending").exists()
        ),
        "no pending delivery",
    )
    # Nothing private in transit: no value, message content or key in any delivered event.
    sent = json.dumps([event for _, event in receiver.received])
    for word in ("Rex", "jazz", "Lisbon", "Max", "pet.name", "dog"):
        assert word not in sent


def test_it_loses_nothing_when_killed_mid_delivery_and_keeps_each_users_order(loopback):
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
    wait_until(
        lambda: len(receiver.first_receipts("/hang")) == total, "every event after the restart"
    )
    assert per_user(receiver, "/hang") == feed_order()
    with receiver.lock:
        assert sum(1 for p, event in receiver.received if event["id"] == held) >= 2  # sent again
    assert receiver.unverified == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {
        name: float(value)
        for name, value in (
            line.rsplit(" ", 1) for line in text.splitlines() if line.startswith("companion_")
        )
    }


def test_it_counts_attempts_dispatches_pending_and_disabled_endpoints_in_metrics(settings):
    from events.models import Event

    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    receiver, port = Receiver(), _free_port()
    worker = WorkerProcess({**worker_env(), "EVENTS_WORKER_METRICS_PORT": str(port)})
    try:
        register(receiver, "/ok")
        register(receiver, "/gone")
        worker.start()
        session()
        total = Event.objects.count()
        wait_until(lambda: len(receiver.first_receipts("/ok")) == total, "every event at /ok")
        wait_until(
            lambda: _metrics(port).get("companion_webhook_pending_deliveries") == 0,
            "the pending gauge at 0",
        )
        seen = _metrics(port)
        assert seen['companion_webhook_attempts_total{outcome="delivered"}'] == total
        assert seen['companion_webhook_attempts_total{outcome="gone"}'] == 1
        assert seen["companion_events_dispatched_total"] == total
        assert seen["companion_webhook_disabled_endpoints"] == 1
        assert seen["companion_webhook_attempt_seconds_count"] == total + 1
    finally:
        worker.stop()
        receiver.stop()
