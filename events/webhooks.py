"""Webhook endpoints (SPEC V3): the address checks (SSRF) at registration and at delivery,
the signing secret, and the signed request of one event (Standard Webhooks)."""

from __future__ import annotations

import base64
import ipaddress
import json
import secrets
import socket
from datetime import datetime
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from config.errors import ValidationError

from .models import WebhookEndpoint
from .outbox import EVENT_TYPES

SECRET_PREFIX = "whsec_"
# Each refusal a setting can lift names that setting, so whoever registers a receiver on their
# own machine learns how (`make run` sets both for its processes; production leaves them off).
HTTPS_REFUSAL = "The URL must use https (WEBHOOK_ALLOW_HTTP=true allows http, for development)."
PRIVATE_REFUSAL = (
    "The host resolves to a loopback, private, link-local or reserved address "
    "(WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true allows these, for development)."
)


def _address_refused(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def url_refusal(url: str, *, resolve=socket.getaddrinfo) -> str | None:
    """Why an endpoint URL is refused, or None (V3): `https` unless `WEBHOOK_ALLOW_HTTP`, no
    credentials in it, and every address its host resolves to public unless
    `WEBHOOK_ALLOW_PRIVATE_ADDRESSES` (loopback, private, link-local, shared and reserved
    addresses are not). Checked at registration and again before every delivery, since a
    name may resolve elsewhere later."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "Not a valid URL."
    allowed = ("https", "http") if settings.WEBHOOK_ALLOW_HTTP else ("https",)
    if parts.scheme not in allowed:
        return HTTPS_REFUSAL
    if not parts.hostname:
        return "The URL has no host."
    if parts.username or parts.password:
        return "The URL must not carry credentials."
    try:
        infos = resolve(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return "The host does not resolve."
    if not infos:
        return "The host does not resolve."
    if not settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES:
        if any(_address_refused(info[4][0]) for info in infos):
            return PRIVATE_REFUSAL
    return None


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _check(url: str, event_types) -> None:
    refusal = url_refusal(url)
    if refusal:
        raise ValidationError(refusal, field="url")
    unknown = sorted(set(event_types) - set(EVENT_TYPES))
    if unknown:
        raise ValidationError(f"Unknown event types: {', '.join(unknown)}.", field="event_types")


def endpoint_create(
    *,
    url: str,
    event_types=(),
    user_ref: str = "",
    description: str = "",
    now: datetime | None = None,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint (V3); returns it and its signing secret, to be shown once."""
    _check(url, event_types)
    secret = new_secret()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.create(
            url=url,
            event_types=sorted(set(event_types)),
            user_ref=user_ref,
            description=description,
            secret=secret,
            created_at=now or timezone.now(),
        )
    return endpoint, secret


def endpoint_change(
    *,
    endpoint: WebhookEndpoint,
    url: str,
    event_types=(),
    user_ref: str = "",
    description: str = "",
) -> WebhookEndpoint:
    """Change a registered endpoint's address, event types, user and description (V3),
    checked as at registration; its secret, state and deliveries stay."""
    _check(url, event_types)
    endpoint.url, endpoint.event_types = url, sorted(set(event_types))
    endpoint.user_ref, endpoint.description = user_ref, description
    with transaction.atomic():
        endpoint.save(update_fields=["url", "event_types", "user_ref", "description"])
    return endpoint


def signed_request(endpoint: WebhookEndpoint, event: dict, at: datetime) -> tuple[bytes, dict]:
    """The body and headers of one delivery (Standard Webhooks: `webhook-id` is the event id,
    so a receiver drops a repeated delivery by it)."""
    body = json.dumps(event, separators=(",", ":"), sort_keys=True)
    signature = Webhook(endpoint.secret).sign(event["id"], at, body)
    return body.encode(), {
        "content-type": "application/json",
        "user-agent": "companion-memory-webhooks/1",
        "webhook-id": event["id"],
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }
