"""The worker's half of V3: the dispatcher follows the feed like any reader and turns each
visible event into one delivery per matching endpoint; a delivery task (Django's tasks API,
`events.tasks`) sends a lane's deliveries — one endpoint, one user — in event order.

At least once, in order per user: a lane is held by one worker at a time through a lease
(`Lane.lease_until`), which a killed worker's lane outlives by at most the lease, after which
the next tick wakes the lane again; its head delivery is sent until it succeeds, gives up or
the endpoint answers 410, and nothing behind it overtakes it. A failure holds the lane until
its next attempt (exponential backoff), scheduled on the queue with `run_after`."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Min, Q
from django.utils import timezone

from . import metrics
from .feed import Position, event_json, retention, visible_after
from .models import Delivery, DeliveryAttempt, DispatchPosition, Event, Lane, WebhookEndpoint
from .webhooks import signed_request, url_refusal

log = logging.getLogger("companion.events")

PRUNE_MARGIN = timedelta(hours=1)  # a transaction open this long still finds its events kept


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: the first delay doubled
    each time, at most the last (V3: 5 s to 1 h by default)."""
    first, most = settings.WEBHOOK_BACKOFF_FIRST_SECONDS, settings.WEBHOOK_BACKOFF_MAX_SECONDS
    return min(first * 2 ** max(attempts - 1, 0), most)


def lease() -> timedelta:
    return timedelta(
        seconds=settings.WEBHOOK_TIMEOUT_SECONDS + settings.WEBHOOK_LEASE_MARGIN_SECONDS
    )


def lanes_per_endpoint() -> int:
    """How many lanes of one endpoint may be held at once (V3), at least one."""
    return max(1, settings.WEBHOOK_LANES_PER_ENDPOINT)


# ---------------------------------------------------------------------------------------------
# The dispatcher: the feed → deliveries


def dispatch(batch: int = 500) -> int:
    """Turn the next visible events into deliveries of the enabled endpoints that take them,
    and move the dispatcher's position past them, in one transaction (the position row is
    locked, so two workers never dispatch an event twice). Returns the number of events read."""
    DispatchPosition.objects.get_or_create(pk=1)
    with transaction.atomic():
        position = DispatchPosition.objects.select_for_update().get(pk=1)
        events = list(visible_after(Position(position.txid, position.event_id))[:batch])
        if not events:
            return 0
        endpoints = list(WebhookEndpoint.objects.filter(enabled=True))
        lanes: dict[tuple[int, str], Lane] = {}
        rows = []
        for event in events:
            for endpoint in endpoints:
                if endpoint.takes(event):
                    lane = lanes.get((endpoint.pk, event.user_ref))
                    if lane is None:
                        lane, _ = Lane.objects.get_or_create(
                            endpoint=endpoint, user_ref=event.user_ref
                        )
                        lanes[(endpoint.pk, event.user_ref)] = lane
                    rows.append(Delivery(lane=lane, event=event))
        Delivery.objects.bulk_create(rows, ignore_conflicts=True)
        position.txid, position.event_id = events[-1].txid, events[-1].id
        position.save(update_fields=["txid", "event_id"])
    metrics.DISPATCHED.inc(len(events))
    return len(events)


def wake_due(enqueue, endpoint_id: int | None = None) -> int:
    """Enqueue a delivery task for each lane with a pending delivery that is due, not held by
    a worker and not already woken (a killed worker's lane is woken once its lease ends).

    V3 ("a slow or dead endpoint never delays another endpoint's deliveries"): at most
    `WEBHOOK_LANES_PER_ENDPOINT` lanes of one endpoint are held or woken at once, so an
    endpoint that hangs for many users holds that many threads and no more. A lane over the
    cap is left due and woken on a later pass, the lanes that waited longest first; each lane
    still sends its own deliveries in event order, so no user's events are reordered. With
    `endpoint_id`, only that endpoint's lanes: a lane that finishes hands its place on."""
    now = timezone.now()
    due = (
        Lane.objects.filter(endpoint__enabled=True, deliveries__status=Delivery.PENDING)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .filter(Q(woken_until__isnull=True) | Q(woken_until__lt=now))
        .filter(**({} if endpoint_id is None else {"endpoint_id": endpoint_id}))
        .values_list("id", "endpoint_id")
        .annotate(oldest=Min("deliveries__id"))
        .order_by("oldest")
    )
    cap, room = lanes_per_endpoint(), _room(now)
    woken = 0
    for lane_id, endpoint, _ in list(due):
        if room.get(endpoint, cap) <= 0:
            continue
        claimed = (
            Lane.objects.filter(pk=lane_id)
            .filter(Q(woken_until__isnull=True) | Q(woken_until__lt=now))
            .update(woken_until=now + lease())
        )
        if claimed:
            room[endpoint] = room.get(endpoint, cap) - 1
            enqueue(lane_id, None)
            woken += 1
    return woken


def _held(now: datetime):
    """The lanes a worker holds or is about to take up: leased or woken (V3's lane cap)."""
    return Lane.objects.filter(Q(lease_until__gte=now) | Q(woken_until__gte=now))


def _room(now: datetime) -> dict[int, int]:
    """How many more lanes each endpoint with held lanes may have woken (V3), in one query."""
    held = _held(now).values("endpoint_id").annotate(n=Count("id")).values_list("endpoint_id", "n")
    return {endpoint_id: lanes_per_endpoint() - n for endpoint_id, n in held}


# ---------------------------------------------------------------------------------------------
# A lane's deliveries


def _take_lease(lane_id: int, endpoint_id: int, token: str, now: datetime) -> bool:
    qs = Lane.objects.filter(pk=lane_id)
    with transaction.atomic():
        # The endpoint's row is locked while its held lanes are counted, so two workers never
        # both take the last place under the cap (V3). A retry scheduled with `run_after`
        # comes here without `wake_due`, and the cap holds for it too.
        endpoint = WebhookEndpoint.objects.select_for_update(no_key=True).filter(pk=endpoint_id)
        list(endpoint.values_list("pk", flat=True))
        free = qs.filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        others = _held(now).filter(endpoint_id=endpoint_id).exclude(pk=lane_id)
        if others.count() >= lanes_per_endpoint():
            free.update(woken_until=None)  # over the cap: woken again on a later pass
            return False
        return bool(free.update(lease_until=now + lease(), leased_by=token))


def _renew_lease(lane_id: int, token: str, now: datetime) -> bool:
    return bool(Lane.objects.filter(pk=lane_id, leased_by=token).update(lease_until=now + lease()))


def deliver_lane(lane_id: int, enqueue, *, max_deliveries: int = 100) -> int:
    """Send the lane's pending deliveries in event order until one fails (V3). Returns how
    many were delivered. A lane another worker holds is left to it."""
    token = uuid.uuid4().hex
    endpoint_id = Lane.objects.filter(pk=lane_id).values_list("endpoint_id", flat=True).first()
    if endpoint_id is None or not _take_lease(lane_id, endpoint_id, token, timezone.now()):
        return 0
    delivered = 0
    try:
        for _ in range(max_deliveries):
            now = timezone.now()
            lane = Lane.objects.select_related("endpoint").filter(pk=lane_id).first()
            if lane is None or not lane.endpoint.enabled:
                break
            if lane.next_attempt_at is not None and lane.next_attempt_at > now:
                break
            head = (
                lane.deliveries.filter(status=Delivery.PENDING)
                .select_related("event")
                .order_by("event__txid", "event_id")
                .first()
            )
            if head is None:
                break
            if not attempt(lane, head, enqueue):
                break
            delivered += 1
            if not _renew_lease(lane_id, token, timezone.now()):
                break
    finally:
        Lane.objects.filter(pk=lane_id, leased_by=token).update(
            lease_until=None, leased_by="", woken_until=None
        )
    # Its place under the endpoint's cap goes to the endpoint's next due lane now, not at the
    # dispatcher's next tick (V3).
    wake_due(enqueue, endpoint_id)
    return delivered


_client = None


def client() -> httpx.Client:
    """One HTTP client for every delivery of this process: explicit timeouts, no redirects
    followed (a redirect could lead past the address checks), no proxies from the environment."""
    global _client
    if _client is None:
        _client = httpx.Client(
            timeout=httpx.Timeout(settings.WEBHOOK_TIMEOUT_SECONDS),
            follow_redirects=False,
            trust_env=False,
        )
    return _client


def _post(endpoint: WebhookEndpoint, event: Event, at: datetime) -> tuple[int | None, str]:
    refusal = url_refusal(endpoint.url)
    if refusal:
        return None, refusal
    row = {
        "id": event.pk,
        "type": event.type,
        "user_ref": event.user_ref,
        "occurred_at": event.occurred_at,
        "data": event.data,
    }
    body, headers = signed_request(endpoint, event_json(row), at)
    try:
        answer = client().post(endpoint.url, content=body, headers=headers)
    except httpx.TimeoutException:
        return None, "Timed out."
    except httpx.HTTPError as exc:
        return None, f"Connection failed ({type(exc).__name__})."
    return (
        answer.status_code,
        "" if 200 <= answer.status_code < 300 else f"Answered {answer.status_code}.",
    )


def attempt(lane: Lane, delivery: Delivery, enqueue) -> bool:
    """One POST of `delivery`, logged (status, latency, error: never a header, a body or a
    secret), and its consequence: delivered; a 410 disables the endpoint at once; any other
    failure holds the lane for the backoff, or past the give-up window fails the delivery
    and disables the endpoint (the reason shown to staff). True when delivered."""
    endpoint = lane.endpoint
    started = time.monotonic()
    at = timezone.now()
    status, error = _post(endpoint, delivery.event, at)
    elapsed = time.monotonic() - started
    metrics.ATTEMPT_SECONDS.observe(elapsed)
    ok = status is not None and 200 <= status < 300
    with transaction.atomic():
        if not Delivery.objects.filter(pk=delivery.pk).exists():
            return ok  # its event was deleted meanwhile (user deleted, pruned)
        DeliveryAttempt.objects.create(
            delivery=delivery,
            at=at,
            status_code=status,
            latency_ms=int(elapsed * 1000),
            error=error[:200],
        )
        delivery.attempts += 1
        delivery.first_attempt_at = delivery.first_attempt_at or at
        if ok:
            delivery.status, delivery.delivered_at = Delivery.DELIVERED, timezone.now()
            Lane.objects.filter(pk=lane.pk).update(next_attempt_at=None)
            outcome = "delivered"
        elif status == 410:
            disable(endpoint, "The endpoint answered 410 Gone.")
            outcome = "gone"
        elif at - delivery.first_attempt_at >= timedelta(seconds=settings.WEBHOOK_GIVE_UP_SECONDS):
            delivery.status = Delivery.FAILED
            disable(
                endpoint,
                f"Deliveries failed for {settings.WEBHOOK_GIVE_UP_SECONDS:g} s "
                f"(last: {error or 'no answer'}).",
            )
            outcome = "failed"
        else:
            retry_at = at + timedelta(seconds=backoff(delivery.attempts))
            Lane.objects.filter(pk=lane.pk).update(
                next_attempt_at=retry_at, woken_until=retry_at + lease()
            )
            transaction.on_commit(lambda: enqueue(lane.pk, retry_at))
            outcome = (
                "refused"
                if status is None and error and not error.startswith(("Timed", "Connection"))
                else "failed"
            )
        delivery.save(update_fields=["attempts", "first_attempt_at", "status", "delivered_at"])
    metrics.ATTEMPTS.labels(outcome).inc()
    log.info(
        "webhook_attempt endpoint=%s event=evt_%s status=%s outcome=%s latency_ms=%d",
        endpoint.pk,
        delivery.event_id,
        status,
        outcome,
        int(elapsed * 1000),
    )
    return ok


def disable(endpoint: WebhookEndpoint, reason: str) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        enabled=False, disabled_at=timezone.now(), disabled_reason=reason
    )
    endpoint.enabled = False
    log.warning("webhook_endpoint_disabled endpoint=%s reason=%s", endpoint.pk, reason)


def enable(endpoint: WebhookEndpoint) -> None:
    """Staff turn an endpoint on again: its lanes start over from their oldest pending
    delivery, the give-up window anew."""
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            enabled=True, disabled_at=None, disabled_reason=""
        )
        Lane.objects.filter(endpoint=endpoint).update(next_attempt_at=None, woken_until=None)
        Delivery.objects.filter(lane__endpoint=endpoint, status=Delivery.PENDING).update(
            first_attempt_at=None
        )


def resend(deliveries) -> int:
    """Staff send deliveries again (the admin): each becomes pending, due at once."""
    with transaction.atomic():
        ids = [d.pk for d in deliveries]
        count = Delivery.objects.filter(pk__in=ids).update(
            status=Delivery.PENDING, first_attempt_at=None, delivered_at=None
        )
        Lane.objects.filter(deliveries__pk__in=ids).update(next_attempt_at=None, woken_until=None)
    return count


# ---------------------------------------------------------------------------------------------
# Background upkeep


def prune(now: datetime | None = None) -> int:
    """V2: delete events older than the retention (and an hour's margin, for a transaction
    that was open that long), their deliveries with them. Returns how many events."""
    cutoff = (now or timezone.now()) - retention() - PRUNE_MARGIN
    _, deleted = Event.objects.filter(occurred_at__lt=cutoff).delete()
    return deleted.get(Event._meta.label, 0)


def gauges() -> None:
    metrics.PENDING.set(
        Delivery.objects.filter(status=Delivery.PENDING, lane__endpoint__enabled=True).count()
    )
    metrics.DISABLED.set(WebhookEndpoint.objects.filter(enabled=False).count())
