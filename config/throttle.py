"""API throttles: per end user, guarded per token, counted in process and shared in batches
(SPEC §12 O4, O6, O7).

**Who counts (O7).** A request counts against the end user it acts for — the `user` of its
path, query, body or body `context` — at its view's scope rate (`runtime`, `import`), and
every request also counts against its token at the much higher `token` rate, the guard. A
request that acts for no user (the capability list, a turn addressed by its conversation's id)
counts against the token alone. So one runtime token serving thousands of users is limited
per user, never for their sum. A user ref is hashed before it becomes a counter's name.

**Fixed windows, shared in batches (O4, and no write per request).** Each counter is a
fixed window (the rate's period, aligned to the epoch). Every process counts its hits in
memory and sends what it counted to the shared store — an upsert of every pending counter in
one statement on the database cache (`config.ThrottleWindow`), one INCRBY + EXPIRE pipeline on
Redis — at most once per `THROTTLE_FLUSH_SECONDS` (1 s), learning every counter's shared total
in the same round trip. A counter whose estimate (the last shared total plus this process's
unsent hits) passes half its limit is sent with every hit, so the limit itself is exact where
it matters; below half, the processes' unsent hits of the last interval are what the others do
not see yet.

**The cache down (O6).** When the shared cache is unavailable (`config.cache`: it failed, timed
out or its breaker is open), counters are counted in the process alone until it answers
again: every process then applies the whole limit on its own. A database cache is the
database: if it cannot be reached, neither can the request's own data (a 503, `config.outage`).

A per-process cache (tests) — or any cache other than the database cache and
`config.cache.ResilientRedisCache`, which the settings choose for every `redis://` URL — counts
in the process alone: each test starts with empty counters.
A refusal is the 429 problem with `Retry-After` (the seconds left in the window).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from rest_framework.throttling import SimpleRateThrottle

from config import metrics
from config.cache import CacheUnavailable, ResilientRedisCache, strict
from config.storage import throttle_hits_add

from .models import ApiToken, ThrottleWindow

TOKEN_SCOPE = "token"

# (counter name, window) → count
Batch = dict[tuple[str, int], int]


class DatabaseStore:
    """The database cache's counters: one upsert of every row, one statement."""

    name = "database"

    def add(self, batch: Batch, durations: dict[str, int]) -> Batch:
        # One row per counter: hits of an earlier window than another in the batch are past.
        latest: dict[str, tuple[int, int]] = {}
        for (key, window), hits in batch.items():
            if key not in latest or window > latest[key][0]:
                latest[key] = (window, hits)
        rows = sorted(latest.items())  # one order for every process: no deadlock between them
        return throttle_hits_add(ThrottleWindow, rows)


class RedisStore:
    """Redis counters: INCRBY + EXPIRE per counter in one pipeline; the window is part of the
    name, so each window starts at 0 and expires by itself."""

    name = "redis"

    def __init__(self, cache: ResilientRedisCache):
        self.cache = cache

    def add(self, batch: Batch, durations: dict[str, int]) -> Batch:
        items = sorted(batch.items())

        def send():
            pipe = self.cache.client(write=True).pipeline(transaction=False)
            for (key, window), hits in items:
                name = self.cache.make_and_validate_key(f"{key}:{window}")
                pipe.incrby(name, hits)
                pipe.expire(name, durations[key] + 1)
            return pipe.execute()

        with strict():
            replies = self.cache.guarded(send)
        return {k: int(replies[2 * i]) for i, (k, _) in enumerate(items)}


class LocalStore:
    """A per-process cache (tests, `locmemcache://`): the process's own counts are the total."""

    name = "local"

    def add(self, batch: Batch, durations: dict[str, int]) -> Batch:
        return {}


class Counters:
    """This process's fixed-window counters in front of a shared store (module docstring)."""

    def __init__(self, flush_seconds: float = 1.0, max_entries: int = 100_000):
        self.flush_seconds, self.max_entries = flush_seconds, max_entries
        self._lock = threading.Lock()
        self._shared: Batch = {}  # last known shared total
        self._pending: Batch = {}  # hits not sent yet
        self._local: Batch = {}  # hits counted here alone (a per-process cache, or an outage)
        self._ends: dict[tuple[str, int], float] = {}  # when each window ends
        self._durations: dict[str, int] = {}
        self._flushed_at = float("-inf")
        self._pruned_at = float("-inf")

    def clear(self) -> None:
        with self._lock:
            self._shared.clear(), self._pending.clear(), self._local.clear(), self._ends.clear()
            self._flushed_at = self._pruned_at = float("-inf")

    def hit(self, store, key: str, duration: int, limit: int, now: float) -> tuple[int, float]:
        """Count one hit; → (the counter's estimated total with it, seconds left in its window)."""
        return self.hit_all(store, [(key, duration, limit)], now)[0]

    def hit_all(self, store, counters, now: float) -> list[tuple[int, float]]:
        """Count one hit on each `(name, duration, limit)`, sending them together when due;
        → (estimated total, seconds left in its window) of each."""
        keys, lefts = [], []
        with self._lock:
            sync = now - self._flushed_at >= self.flush_seconds
            for key, duration, limit in counters:
                window = int(now // duration)
                k = (key, window)
                left = (window + 1) * duration - now
                keys.append(k), lefts.append(left)
                self._durations[key] = duration
                self._ends[k] = now + left
                if isinstance(store, LocalStore):
                    self._local[k] = self._local.get(k, 0) + 1
                    continue
                self._pending[k] = self._pending.get(k, 0) + 1
                if 2 * self._estimate(k) > limit:
                    sync = True
            if isinstance(store, LocalStore) or not sync:
                self._prune(now)
                return [(self._estimate(k), left) for k, left in zip(keys, lefts, strict=True)]
            batch, self._pending = self._pending, {}
            self._flushed_at = now
            durations = dict(self._durations)
        try:
            totals = store.add(batch, durations)
        except CacheUnavailable:
            metrics.THROTTLE_LOCAL.inc(sum(batch.values()))
            totals = {}
            with self._lock:
                for b, hits in batch.items():
                    self._local[b] = self._local.get(b, 0) + hits
        except BaseException:
            with self._lock:  # the database failed: the hits stay to be sent next time
                for b, hits in batch.items():
                    self._pending[b] = self._pending.get(b, 0) + hits
            raise
        with self._lock:
            self._shared.update(totals)
            self._prune(now)
            return [(self._estimate(k), left) for k, left in zip(keys, lefts, strict=True)]

    def _estimate(self, k) -> int:
        return self._shared.get(k, 0) + self._pending.get(k, 0) + self._local.get(k, 0)

    def _prune(self, now: float) -> None:
        """Forget counters whose window ended: at most once a second, and only when many."""
        if now - self._pruned_at < 1.0 or len(self._ends) < min(1024, self.max_entries):
            return
        self._pruned_at = now
        for k in [k for k, end in self._ends.items() if end <= now]:
            self._ends.pop(k, None)
            self._shared.pop(k, None)
            self._local.pop(k, None)
            self._pending.pop(k, None)
        if len(self._ends) > self.max_entries:  # still too many live windows: start again
            self._shared.clear(), self._local.clear(), self._ends.clear()
        live = {key for key, _ in self._ends} | {key for key, _ in self._pending}
        self._durations = {key: d for key, d in self._durations.items() if key in live}


COUNTERS = Counters(flush_seconds=getattr(settings, "THROTTLE_FLUSH_SECONDS", 1.0))


def store_for(cache):
    if isinstance(cache, ResilientRedisCache):
        return RedisStore(cache)
    if isinstance(cache, DatabaseCache):
        return DatabaseStore()
    return LocalStore()


def _user_ref(request, view) -> str | None:
    """The end user a request acts for (O7): its path's, query's, body's or body context's
    `user`, the first that is a string."""
    kwargs = getattr(view, "kwargs", None) or {}
    candidates: list = [
        kwargs.get("user_ref"),
        kwargs.get("user"),
        request.query_params.get("user"),
    ]
    if request.method not in ("GET", "HEAD", "OPTIONS", "DELETE"):
        data = request.data  # parsed once; a malformed body is the same 400 it would be anyway
        if isinstance(data, dict):
            context = data.get("context")
            candidates += [
                data.get("user"),
                context.get("user") if isinstance(context, dict) else None,
            ]
    for ref in candidates:
        if isinstance(ref, str) and ref:
            return ref
    return None


def user_key(scope: str, ref: str) -> str:
    digest = hashlib.sha256(ref.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"throttle_{scope}_user_{digest}"


def token_key(token_pk) -> str:
    return f"throttle_{TOKEN_SCOPE}_{token_pk}"


class RuntimeThrottle(SimpleRateThrottle):
    """Per end user at the view's `throttle_scope` rate (default `runtime`), per token at the
    `token` rate (module docstring)."""

    _wait: float | None = None

    def get_rate(self):
        return None  # set per request in allow_request, from the view's scope

    def counted(self, request, view) -> Iterable[tuple[str, str]]:
        """(counter name, rate) of each counter this request counts against."""
        scope = getattr(view, "throttle_scope", "runtime")
        rates = self.THROTTLE_RATES
        ref = _user_ref(request, view) if scope in rates else None
        if ref is not None:
            yield user_key(scope, ref), rates[scope]
        if TOKEN_SCOPE in rates:
            yield token_key(request.auth.pk), rates[TOKEN_SCOPE]

    def allow_request(self, request, view):
        if not isinstance(request.auth, ApiToken):
            return True
        counters = []
        for key, rate in self.counted(request, view):
            limit, duration = self.parse_rate(rate)
            counters.append((key, duration, limit))
        if not counters:
            return True
        self._wait = longest_wait(counters, self.timer())
        return self._wait is None

    def wait(self):
        return self._wait


def reset() -> None:
    """Forget this process's counters (tests start each case with none)."""
    COUNTERS.clear()


def longest_wait(counters: list[tuple[str, int, int]], now: float) -> float | None:
    """Count one request on each `(key, duration, limit)` counter at once and answer how long
    the caller must wait before the most exceeded one lets it through, or None when none is
    over its limit (the runtime's buckets and a connection's, O-rules, §15 M2)."""
    results = COUNTERS.hit_all(store_for(caches["default"]), counters, now)
    waits = [
        left
        for (total, left), (_, _, limit) in zip(results, counters, strict=True)
        if total > limit
    ]
    return max(waits) if waits else None
