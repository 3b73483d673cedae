"""SPEC V3 in-process: the address rules (SSRF) at registration and at delivery, Standard
Webhooks signatures, the backoff schedule, the give-up window, the admin's endpoint
registration (secret shown once), attempts log, "send again" and "enable again"."""

import socket
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from config.errors import ValidationError
from events import delivery
from events.models import Delivery, DeliveryAttempt, Event, Lane, WebhookEndpoint
from events.webhooks import endpoint_create, signed_request, url_refusal

pytestmark = pytest.mark.django_db

# V3: each refusal a setting lifts names the setting.
HTTPS = "The URL must use https (WEBHOOK_ALLOW_HTTP=true allows http, for development)."
PRIVATE = (
    "The host resolves to a loopback, private, link-local or reserved address "
    "(WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true allows these, for development)."
)


def resolving_to(*addresses):
    def resolve(host, port, type=0):
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    return resolve


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.9",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_it_refuses_loopback_private_link_local_and_reserved_addresses(address):
    refusal = url_refusal("https://hooks.example.com/in", resolve=resolving_to(address))
    assert refusal == PRIVATE


def test_it_refuses_a_url_with_one_refused_address_among_public_ones():
    assert url_refusal(
        "https://hooks.example.com/in", resolve=resolving_to("93.184.216.34", "10.0.0.1")
    )


def test_it_takes_https_to_a_public_address():
    assert (
        url_refusal("https://hooks.example.com/in", resolve=resolving_to("93.184.216.34")) is None
    )


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://hooks.example.com/in", HTTPS),
        ("ftp://hooks.example.com/in", HTTPS),
        ("https://user:pw@hooks.example.com/in", "The URL must not carry credentials."),
        ("https:///in", "The URL has no host."),
    ],
)
def test_it_refuses_other_schemes_and_credentials(url, reason):
    assert url_refusal(url, resolve=resolving_to("93.184.216.34")) == reason


def test_it_allows_http_and_private_addresses_by_setting_for_development(settings):
    settings.WEBHOOK_ALLOW_HTTP = True
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    assert url_refusal("http://127.0.0.1:9/in", resolve=resolving_to("127.0.0.1")) is None


def test_it_refuses_to_register_a_refused_url_or_unknown_types():
    with pytest.raises(ValidationError) as refused:
        endpoint_create(url="https://127.0.0.1/in")
    assert refused.value.errors == {"url": [PRIVATE]}
    with pytest.raises(ValidationError):
        endpoint_create(url="https://93.184.216.34/in", event_types=["memory.exploded"])
    assert not WebhookEndpoint.objects.exists()


def test_it_checks_the_address_again_on_delivery_and_logs_the_refusal(settings):
    """V3: the address may resolve elsewhere later: checked before every POST."""
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    endpoint, _ = endpoint_create(url="http://127.0.0.1:9/in")
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    lane, d = _pending(endpoint)
    enqueued = []
    assert delivery.attempt(lane, d, lambda *a: enqueued.append(a)) is False
    attempt = DeliveryAttempt.objects.get()
    assert attempt.status_code is None and attempt.error.startswith(
        "The host resolves to a loopback"
    )
    lane.refresh_from_db()
    assert lane.next_attempt_at is not None


def _pending(endpoint):
    event = Event.objects.create(
        type="settings.changed",
        user_ref="sam",
        occurred_at=timezone.now(),
        data={"learn": False, "use": True, "changed_by": "api"},
    )
    lane = Lane.objects.create(endpoint=endpoint, user_ref="sam")
    return Lane.objects.select_related("endpoint").get(pk=lane.pk), Delivery.objects.create(
        lane=lane, event=event
    )


def test_it_signs_requests_that_verify_with_the_standard_webhooks_library():
    endpoint = WebhookEndpoint(url="https://hooks.example.com/in", secret="whsec_" + "QUJD" * 11)
    event = {
        "id": "evt_7",
        "type": "memory.created",
        "user": "sam",
        "occurred_at": "2026-12-02T07:00:00Z",
        "data": {"memory": "m1"},
    }
    now = timezone.now()
    body, headers = signed_request(endpoint, event, now)
    assert headers["webhook-id"] == "evt_7" and headers["webhook-timestamp"] == str(
        int(now.timestamp())
    )
    assert headers["webhook-signature"].startswith("v1,")
    assert Webhook(endpoint.secret).verify(body, headers) == event
    with pytest.raises(Exception):  # noqa: B017 — the library's verification error
        Webhook("whsec_" + "WFla" * 11).verify(body, headers)


def test_it_makes_a_standard_webhooks_secret_of_32_random_bytes():
    import base64

    a, b = (endpoint_create(url="https://93.184.216.34/in")[1] for _ in range(2))
    assert a != b and a.startswith("whsec_") and len(base64.b64decode(a[6:])) == 32


def test_it_doubles_the_backoff_from_5_seconds_up_to_an_hour():
    assert [delivery.backoff(n) for n in range(1, 14)] == [
        5,
        10,
        20,
        40,
        80,
        160,
        320,
        640,
        1280,
        2560,
        3600,
        3600,
        3600,
    ]


def test_it_fails_the_delivery_and_disables_the_endpoint_past_the_give_up_window(settings):
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOK_GIVE_UP_SECONDS = 60
    endpoint, _ = endpoint_create(url="http://127.0.0.1:9/in")  # nothing listens on port 9
    lane, d = _pending(endpoint)
    d.first_attempt_at = timezone.now() - timedelta(seconds=61)
    d.save()
    assert delivery.attempt(lane, d, lambda *a: None) is False
    d.refresh_from_db()
    endpoint.refresh_from_db()
    assert d.status == "failed" and not endpoint.enabled
    assert endpoint.disabled_reason.startswith(
        "Deliveries failed for 60 s (last: Connection failed"
    )


@pytest.fixture
def staff_client(client):
    admin = get_user_model().objects.create_superuser(
        "root", "root@example.com", "pw-long-enough-1"
    )
    client.force_login(admin)
    return client


def test_it_registers_an_endpoint_in_the_admin_and_shows_its_secret_once(staff_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    refused = staff_client.post(
        "/admin/events/webhookendpoint/add/",
        {
            "url": "https://127.0.0.1/in",
            "event_types": ["memory.forgotten"],
            "user_ref": "",
            "description": "",
        },
    )
    assert refused.status_code == 200 and "loopback" in refused.content.decode()
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    added = staff_client.post(
        "/admin/events/webhookendpoint/add/",
        {
            "url": "https://127.0.0.1/in",
            "event_types": ["memory.forgotten"],
            "user_ref": "sam",
            "description": "the index",
        },
        follow=True,
    )
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.event_types == ["memory.forgotten"] and endpoint.user_ref == "sam"
    assert endpoint.secret in added.content.decode()
    page = staff_client.get(f"/admin/events/webhookendpoint/{endpoint.pk}/change/").content.decode()
    listing = staff_client.get("/admin/events/webhookendpoint/").content.decode()
    assert endpoint.secret not in page and endpoint.secret not in listing


def test_it_changes_an_endpoint_in_the_admin_through_the_service_keeping_its_secret(
    staff_client, settings
):
    """V3: an endpoint changed in the admin is checked as at registration
    (`events.webhooks.endpoint_change`); its secret stays."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    endpoint, secret = endpoint_create(url="https://127.0.0.1/in", event_types=["memory.forgotten"])
    changed = staff_client.post(
        f"/admin/events/webhookendpoint/{endpoint.pk}/change/",
        {
            "url": "https://127.0.0.1/other",
            "event_types": ["memory.forgotten", "memory.changed"],
            "user_ref": "sam",
            "description": "the index",
        },
    )
    assert changed.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.event_types, endpoint.user_ref, endpoint.secret) == (
        "https://127.0.0.1/other",
        ["memory.changed", "memory.forgotten"],
        "sam",
        secret,
    )


def test_it_names_the_setting_that_allows_a_loopback_receiver_when_the_admin_refuses_it(
    staff_client, settings
):
    """V3: with the production rules (both settings off) a receiver on this machine is refused
    with the setting that would allow it named, first http, then the loopback address; with
    both on, as `make run` sets them, it is registered."""
    fields = {"url": "http://127.0.0.1:8001/hook", "user_ref": "", "description": ""}
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    refused = staff_client.post("/admin/events/webhookendpoint/add/", fields)
    assert refused.context["adminform"].form.errors["url"] == [HTTPS]
    settings.WEBHOOK_ALLOW_HTTP = True
    refused = staff_client.post("/admin/events/webhookendpoint/add/", fields)
    assert refused.context["adminform"].form.errors["url"] == [PRIVATE]
    assert not WebhookEndpoint.objects.exists()
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    added = staff_client.post("/admin/events/webhookendpoint/add/", fields)
    assert added.status_code == 302
    assert WebhookEndpoint.objects.get().url == "http://127.0.0.1:8001/hook"


def test_it_shows_attempts_in_the_admin_and_sends_a_delivery_again(staff_client, settings):
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    endpoint, secret = endpoint_create(url="http://127.0.0.1:9/in")
    lane, d = _pending(endpoint)
    DeliveryAttempt.objects.create(
        delivery=d, at=timezone.now(), status_code=503, latency_ms=12, error="Answered 503."
    )
    Delivery.objects.filter(pk=d.pk).update(status="failed", attempts=1)
    page = staff_client.get(f"/admin/events/delivery/{d.pk}/change/").content.decode()
    assert "Answered 503." in page and "503" in page and secret not in page
    staff_client.post(
        "/admin/events/delivery/", {"action": "send_again", "_selected_action": [d.pk]}
    )
    d.refresh_from_db()
    assert d.status == "pending"
    assert staff_client.get("/admin/events/event/").status_code == 200


def test_it_enables_an_endpoint_again_in_the_admin_and_restarts_its_give_up_window(
    staff_client, settings
):
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOK_GIVE_UP_SECONDS = 60
    endpoint, _ = endpoint_create(url="http://127.0.0.1:9/in")  # nothing listens on port 9
    lane, d = _pending(endpoint)
    delivery.disable(endpoint, "The endpoint answered 410 Gone.")
    Lane.objects.filter(pk=lane.pk).update(next_attempt_at=timezone.now() + timedelta(hours=1))
    Delivery.objects.filter(pk=d.pk).update(first_attempt_at=timezone.now() - timedelta(seconds=61))

    answer = staff_client.post(
        "/admin/events/webhookendpoint/",
        {"action": "enable_again", "_selected_action": [endpoint.pk]},
        follow=True,
    )

    assert "Enabled 1 endpoint(s)." in answer.content.decode()
    endpoint.refresh_from_db()
    lane.refresh_from_db()
    d.refresh_from_db()
    assert (endpoint.enabled, endpoint.disabled_at, endpoint.disabled_reason) == (True, None, "")
    assert (lane.next_attempt_at, d.status, d.first_attempt_at) == (None, "pending", None)
    # A failed try now starts a fresh window: the delivery stays pending, the endpoint enabled.
    assert delivery.attempt(lane, d, lambda *a: None) is False
    d.refresh_from_db()
    endpoint.refresh_from_db()
    assert d.status == "pending" and endpoint.enabled


def _lanes(endpoint, users, events_each=2):
    """A lane of `endpoint` per user, each with `events_each` pending deliveries (V3)."""
    lanes = []
    for user in users:
        lane = Lane.objects.create(endpoint=endpoint, user_ref=user)
        for n in range(events_each):
            event = Event.objects.create(
                type="settings.changed", user_ref=user, occurred_at=timezone.now(), data={"n": n}
            )
            Delivery.objects.create(lane=lane, event=event)
        lanes.append(lane.pk)
    return lanes


def _endpoint(name):
    return WebhookEndpoint.objects.create(
        url=f"https://hooks.example.com/{name}",
        secret="whsec_" + "QUJD" * 11,
        created_at=timezone.now(),
    )


@pytest.fixture
def answering(monkeypatch):
    """Every POST answers 200; the (endpoint, user, event) of each is recorded in order."""
    sent = []

    def post(endpoint, event, at):
        sent.append((endpoint.pk, event.user_ref, event.pk))
        return 200, ""

    monkeypatch.setattr(delivery, "_post", post)
    return sent


def _wake():
    """The lanes one pass of `wake_due` wakes."""
    woken = []
    delivery.wake_due(lambda lane_id, at: woken.append(lane_id))
    return woken


def test_it_wakes_at_most_the_cap_of_one_endpoints_lanes_and_the_rest_once_they_finish(
    settings, answering
):
    """V3: a slow or dead endpoint never delays another endpoint's deliveries — at most
    `WEBHOOK_LANES_PER_ENDPOINT` of one endpoint's lanes are woken, another endpoint's lane
    beside them, and the rest once a place is handed on; nothing lost, each user in order."""
    settings.WEBHOOK_LANES_PER_ENDPOINT = 2
    busy, other = _endpoint("busy"), _endpoint("other")
    users = ["u1", "u2", "u3", "u4", "u5"]
    busy_lanes = _lanes(busy, users)
    other_lanes = _lanes(other, ["u1"])
    queue = []

    def enqueue(lane_id, at):
        queue.append(lane_id)

    assert delivery.wake_due(enqueue) == 3
    assert sorted(queue) == sorted(busy_lanes[:2] + other_lanes)  # the oldest lanes first
    assert _wake() == []  # the busy endpoint is at its cap until its lanes finish

    sent_lanes = []
    while queue:
        assert Lane.objects.filter(endpoint=busy, woken_until__isnull=False).count() <= 2
        lane_id = queue.pop(0)
        sent_lanes.append(lane_id)
        delivery.deliver_lane(lane_id, enqueue)  # a finished lane hands its place on

    assert [lane for lane in sent_lanes if lane in busy_lanes] == busy_lanes
    assert not Delivery.objects.filter(status=Delivery.PENDING).exists()  # nothing lost
    for user in users:  # each user's events in order
        sent = [event for endpoint, u, event in answering if endpoint == busy.pk and u == user]
        assert sent == sorted(sent) and len(sent) == 2


def test_it_leaves_a_retry_over_its_endpoints_cap_to_a_later_pass(settings, answering):
    """V3: a backoff's retry, which comes without the dispatcher, takes its lease only under
    its endpoint's cap; over it, it sends nothing and keeps its deliveries for a later pass."""
    settings.WEBHOOK_LANES_PER_ENDPOINT = 1
    endpoint = _endpoint("busy")
    held, retried = _lanes(endpoint, ["u1", "u2"])
    assert _wake() == [held]

    # A backoff's task (`run_after`) comes without wake_due while the cap is taken: it sends
    # nothing and leaves the lane to a later pass.
    assert delivery.deliver_lane(retried, lambda *a: None) == 0
    assert Lane.objects.get(pk=retried).woken_until is None
    assert Delivery.objects.filter(lane_id=retried, status=Delivery.PENDING).count() == 2

    handed = []
    assert delivery.deliver_lane(held, lambda lane_id, at: handed.append(lane_id)) == 2
    assert handed == [retried]
    assert delivery.deliver_lane(retried, lambda *a: None) == 2
    assert not Delivery.objects.filter(status=Delivery.PENDING).exists()
