"""The shared cache degrades, it never stalls a request (SPEC §12 O6).

`ResilientRedisCache` is Django's own RedisCache with three additions:

- **Timeouts on every call.** The connection pool gets a connect and a socket (read/write)
  timeout, `CACHE_CONNECT_TIMEOUT` and `CACHE_SOCKET_TIMEOUT` (0.1 s each by default), and no
  retries: redis-py waits forever without them, so a frozen server (a stopped process whose
  connections stay open) would hold every request that counts a throttle.
- **A circuit breaker per process.** After a failed call the breaker opens and the cache is
  not called at all for `CACHE_BREAKER_SECONDS` (5 s by default); then one caller probes it
  (half-open) and its success closes the breaker again. While open, a call costs nothing.
- **Degrading, or saying so.** A failed or skipped read answers the default and a write does
  nothing, as a miss would: what is cached can always be rebuilt. A caller that must not
  silently lose a count (the throttle, the sign-in lockout) calls inside `strict()`, where the
  same cases raise `CacheUnavailable`, and falls back to its own store.

One line is logged when the breaker opens and one when it closes again (with the number of
calls it skipped), never per request; the trips are counted in a metric.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from django.core.cache import caches
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from config import metrics

log = logging.getLogger("companion.cache")

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 0.1
DEFAULT_BREAKER_SECONDS = 5.0


class CacheUnavailable(Exception):
    """The shared cache failed, timed out or is skipped by an open breaker."""


class CircuitBreaker:
    """closed → (a failure) → open for `cooldown` seconds → half-open: one probe call is let
    through; its success closes the breaker, its failure opens it again. Thread-safe."""

    def __init__(self, name: str, cooldown: float, clock: Callable[[], float] = time.monotonic):
        self.name, self.cooldown, self.clock = name, cooldown, clock
        self._lock = threading.Lock()
        self._opened_at: float | None = None
        self._probing = False
        self.skipped = 0

    @property
    def is_open(self) -> bool:
        return self._opened_at is not None

    def allow(self) -> bool:
        """Whether a call may go to the server now (a closed breaker, or the one probe)."""
        if self._opened_at is None:
            return True
        with self._lock:
            if self._opened_at is None:
                return True
            if not self._probing and self.clock() - self._opened_at >= self.cooldown:
                self._probing = True
                return True
            self.skipped += 1
            return False

    def succeeded(self) -> None:
        if self._opened_at is None:
            return
        with self._lock:
            if self._opened_at is None:
                return
            skipped, self.skipped = self.skipped, 0
            self._opened_at, self._probing = None, False
        log.warning("cache_recovered cache=%s skipped_calls=%d", self.name, skipped)

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            first = self._opened_at is None
            self._opened_at, self._probing = self.clock(), False
        if first:
            kind = type(exc)
            log.warning(
                "cache_unavailable cache=%s error=%s.%s breaker_seconds=%s",
                self.name,
                kind.__module__,
                kind.__qualname__,
                self.cooldown,
            )
            metrics.CACHE_BREAKER_TRIPS.labels(cache=self.name).inc()

    def reset(self) -> None:
        with self._lock:
            self._opened_at, self._probing, self.skipped = None, False, 0


_strict: contextvars.ContextVar[bool] = contextvars.ContextVar("cache_strict", default=False)
_breakers: dict[str, CircuitBreaker] = {}
_breakers_lock = threading.Lock()


@contextlib.contextmanager
def strict() -> Iterator[None]:
    """Inside, a cache that fails or is skipped raises `CacheUnavailable` instead of acting
    as a miss."""
    token = _strict.set(True)
    try:
        yield
    finally:
        _strict.reset(token)


def breaker_for(name: str, cooldown: float = DEFAULT_BREAKER_SECONDS) -> CircuitBreaker:
    with _breakers_lock:
        breaker = _breakers.get(name)
        if breaker is None:
            breaker = _breakers[name] = CircuitBreaker(name, cooldown)
        return breaker


def reset_breakers() -> None:
    """Close every breaker of this process (tests)."""
    for breaker in list(_breakers.values()):
        breaker.reset()


_MISS = object()


def _scrubbed(server) -> str:
    """A name for the breaker (logs, metric label): the servers' host, port and database,
    never a password from the URL."""
    names = []
    for url in server if isinstance(server, list | tuple) else str(server).split(","):
        parts = urllib.parse.urlsplit(url.strip())
        where = (
            f"{parts.hostname}:{parts.port or 6379}{parts.path}" if parts.hostname else parts.path
        )
        names.append(where)
    return ",".join(names)


class ResilientRedisCache(RedisCache):
    """Django's RedisCache with timeouts, no retries and a circuit breaker (module docstring).

    OPTIONS: `socket_connect_timeout` and `socket_timeout` (seconds, default 0.1),
    `breaker_seconds` (default 5); every other option goes to redis-py's pool as before."""

    def __init__(self, server, params):
        params = dict(params)
        options = dict(params.get("OPTIONS") or {})
        cooldown = float(options.pop("breaker_seconds", DEFAULT_BREAKER_SECONDS))
        options.setdefault("socket_connect_timeout", DEFAULT_TIMEOUT_SECONDS)
        options.setdefault("socket_timeout", DEFAULT_TIMEOUT_SECONDS)
        options.setdefault("retry_on_timeout", False)
        options.setdefault("retry", Retry(NoBackoff(), 0))
        params["OPTIONS"] = options
        super().__init__(server, params)
        self.breaker = breaker_for(_scrubbed(server), cooldown)

    @property
    def available(self) -> bool:
        """Whether calls go to the server now (the breaker is closed)."""
        return not self.breaker.is_open

    def guarded(self, call: Callable[[], T], default: Any = None) -> T:
        """Run one call to the server under the breaker: a failure opens it; a skipped or
        failed call raises `CacheUnavailable` inside `strict()`, else answers `default`."""
        if not self.breaker.allow():
            if _strict.get():
                raise CacheUnavailable(self.breaker.name)
            return default
        try:
            result = call()
        except (RedisError, OSError) as exc:  # connection errors, timeouts, socket errors
            self.breaker.failed(exc)
            if _strict.get():
                raise CacheUnavailable(self.breaker.name) from exc
            return default
        self.breaker.succeeded()
        return result

    def client(self, *, write: bool = True):
        """The redis-py client, for a pipeline run through `guarded`."""
        return self._cache.get_client(write=write)

    # Every operation of the cache API, each one call under the breaker.
    def get(self, key, default=None, version=None):
        value = self.guarded(
            lambda: super(ResilientRedisCache, self).get(key, _MISS, version), _MISS
        )
        return default if value is _MISS else value

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self.guarded(
            lambda: super(ResilientRedisCache, self).set(key, value, timeout, version)
        )

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self.guarded(
            lambda: super(ResilientRedisCache, self).add(key, value, timeout, version), False
        )

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self.guarded(
            lambda: super(ResilientRedisCache, self).touch(key, timeout, version), False
        )

    def delete(self, key, version=None):
        return self.guarded(lambda: super(ResilientRedisCache, self).delete(key, version), False)

    def get_many(self, keys, version=None):
        return self.guarded(lambda: super(ResilientRedisCache, self).get_many(keys, version), {})

    def has_key(self, key, version=None):
        return self.guarded(lambda: super(ResilientRedisCache, self).has_key(key, version), False)

    def incr(self, key, delta=1, version=None):
        value = self.guarded(
            lambda: super(ResilientRedisCache, self).incr(key, delta, version), _MISS
        )
        if value is _MISS:
            raise ValueError(f"Key '{key}' not found (the cache is unavailable).")
        return value

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self.guarded(
            lambda: super(ResilientRedisCache, self).set_many(data, timeout, version), list(data)
        )

    def delete_many(self, keys, version=None):
        return self.guarded(lambda: super(ResilientRedisCache, self).delete_many(keys, version))

    def clear(self):
        return self.guarded(lambda: super(ResilientRedisCache, self).clear(), False)

    def ping(self) -> bool:
        """One PING under the breaker: whether the server answered."""
        return bool(self.guarded(lambda: self.client(write=False).ping(), False))


def shared_cache():
    return caches["default"]


def cache_state() -> str:
    """`/readyz`'s `cache` (SPEC §12 O6): `ok` when the shared cache answers, `degraded` when it
    does not (requests go on without it). A per-process or database cache is `ok` here: the
    database check reports the database."""
    cache = shared_cache()
    if isinstance(cache, ResilientRedisCache):
        return "ok" if cache.ping() else "degraded"
    return "ok"
