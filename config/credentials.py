"""The API token check, cheap on the hot path (SPEC §10, §12 O4).

A token found valid is remembered by the process for `API_TOKEN_CACHE_SECONDS` (5 s by
default): within that time the same token costs no query at all. **A revoked token is refused
by every process within that time**, not at once (the process that revokes it forgets it at
once). Only valid tokens are remembered: a wrong one costs its query every time.

A token check that reads the database also reads the catalog version in the same statement
(`config.catalog`); a request whose token came from memory reads the version the first time
it uses catalog data, so freshness still costs at most one statement per request.

`last_used_at` is written at most once per `API_TOKEN_LAST_USED_SECONDS` (300 s by default)
per token, by the request whose check found it older than that — never a write per request.
Zero switches either off (the test suite does, so its query counts stay those of one check
per request)."""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from config import catalog

from .models import ApiToken, hash_token


class TokenChecks:
    """Valid tokens by hash, each with when it was checked; bounded, thread-safe."""

    def __init__(self, max_entries: int = 10_000):
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._held: dict[str, tuple[ApiToken, float]] = {}

    def get(self, digest: str, ttl: float, now: float) -> ApiToken | None:
        held = self._held.get(digest)
        if held is None or now - held[1] >= ttl:
            return None
        return held[0]

    def put(self, digest: str, token: ApiToken, now: float) -> None:
        with self._lock:
            if len(self._held) >= self.max_entries:
                self._held.clear()
            self._held[digest] = (token, now)

    def forget(self, token_hashes) -> None:
        with self._lock:
            for digest in token_hashes:
                self._held.pop(digest, None)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()


CHECKS = TokenChecks()


def _seconds(name: str, default: float) -> float:
    return float(getattr(settings, name, default) or 0)


def authenticate(raw: str) -> ApiToken | None:
    """The valid, unrevoked token `raw`, or None."""
    digest = hash_token(raw)
    ttl = _seconds("API_TOKEN_CACHE_SECONDS", 5)
    now = time.monotonic()
    if ttl > 0:
        token = CHECKS.get(digest, ttl, now)
        if token is not None:
            return token
    # One query: the token, and the catalog version the request's catalog data must match.
    token = (
        ApiToken.objects.filter(token_hash=digest, revoked_at__isnull=True)
        .annotate(catalog_version=catalog.version_subquery())
        .first()
    )
    if token is None:
        return None
    catalog.note_version(token.catalog_version)
    _mark_used(token)
    if ttl > 0:
        CHECKS.put(digest, token, now)
    return token


def _mark_used(token: ApiToken) -> None:
    interval = _seconds("API_TOKEN_LAST_USED_SECONDS", 300)
    if interval <= 0:
        return
    now = timezone.now()
    if token.last_used_at is not None and (now - token.last_used_at).total_seconds() < interval:
        return
    stale = Q(last_used_at__isnull=True) | Q(
        last_used_at__lt=now - timezone.timedelta(seconds=interval)
    )
    ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)
    token.last_used_at = now


def forget(tokens) -> None:
    """Tokens just revoked in this process are refused by it at once."""
    CHECKS.forget(t.token_hash for t in tokens)


def clear() -> None:
    CHECKS.clear()
