"""The connection token check (SPEC §15 M1, M2): one function that turns the bearer token of
an `/mcp` request (or of `manage.py mcp`) into the connection and its user, or nothing.

Unlike a runtime token (`config.credentials`), a connection is never remembered by the
process: a revocation or an expiry takes effect on the very next request, in every process.
A runtime token is not a connection token (they live in different tables), so it is refused
here, as a connection token is refused by `/api/v1/`."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db.models import Q

from config.clock import db_now
from config.models import hash_token

from .models import Connection

TOKEN_PREFIX = "cmc_"


def new_token() -> tuple[str, str, str]:
    """A fresh token: (raw, its hash, the prefix shown to recognise it)."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return raw, hash_token(raw), raw[:12]


def plausible(raw) -> bool:
    return isinstance(raw, str) and raw.startswith(TOKEN_PREFIX) and 0 < len(raw) <= 200


def authenticate(raw: str) -> Connection | None:
    """The live connection (not revoked, not expired) whose token is `raw`, with its user, or
    None. One query, plus a write of `last_used_at` at most once per
    `CONNECTION_LAST_USED_SECONDS` (60 s by default) per connection."""
    if not plausible(raw):
        return None
    now = db_now()
    connection = (
        Connection.objects.select_related("user")
        .filter(token_hash=hash_token(raw), revoked_at__isnull=True, expires_at__gt=now)
        .first()
    )
    if connection is None or not connection.user.is_active:
        return None
    _mark_used(connection, now)
    return connection


def _mark_used(connection: Connection, now) -> None:
    interval = float(getattr(settings, "CONNECTION_LAST_USED_SECONDS", 60))
    last = connection.last_used_at
    if last is not None and (now - last).total_seconds() < interval:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - timedelta(seconds=interval))
    Connection.objects.filter(stale, pk=connection.pk).update(last_used_at=now)
    connection.last_used_at = now


def still_live(connection: Connection) -> bool:
    """M2: a write checks its connection again inside its own transaction, with the row locked,
    so a revocation that commits first wins."""
    return (
        Connection.objects.select_for_update()
        .filter(pk=connection.pk, revoked_at__isnull=True, expires_at__gt=db_now())
        .exists()
    )
