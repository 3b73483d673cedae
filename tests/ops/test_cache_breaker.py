"""SPEC §12 O6: every call to the shared cache has a connect and read timeout (100 ms by
default) and no retries; after a failure a circuit breaker stops calling it for a few seconds,
then lets one probe through. Meanwhile requests go on: reads are misses, the throttle counts
per process (tests/ops/test_throttle.py), the sign-in lockout counts in the database — never no
limit — and catalog data comes from the database as always. `/readyz` says `degraded`, 200."""

from __future__ import annotations

import logging
import socket
import threading

import pytest
from django.core.cache import caches

from config.cache import CacheUnavailable, CircuitBreaker, ResilientRedisCache, strict
from tests.helpers import Collect

DEAD_REDIS = "redis://127.0.0.1:1/0"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def cache_log():
    handler = Collect()
    logger = logging.getLogger("companion.cache")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def test_it_opens_on_a_failure_and_lets_one_probe_through_later(cache_log):
    clock = Clock()
    breaker = CircuitBreaker("test", cooldown=5.0, clock=clock)
    assert breaker.allow()
    breaker.failed(ConnectionError())
    assert breaker.is_open and not breaker.allow() and not breaker.allow()
    clock.now += 5.0
    assert breaker.allow()  # the probe
    assert not breaker.allow()  # only one
    breaker.failed(TimeoutError())  # the probe failed: open again for 5 s
    clock.now += 4.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.allow()
    breaker.succeeded()
    assert not breaker.is_open and breaker.allow()
    lines = [r.getMessage() for r in cache_log]
    assert len(lines) == 2, lines  # one when it opened, one when it closed: not per call
    assert lines[0].startswith("cache_unavailable cache=test error=builtins.ConnectionError")
    assert lines[1] == "cache_recovered cache=test skipped_calls=4"


def resilient(location: str, **options) -> ResilientRedisCache:
    return ResilientRedisCache(location, {"OPTIONS": options})


def test_it_gives_every_call_timeouts_and_no_retries():
    cache = resilient(DEAD_REDIS)
    kwargs = cache._cache._get_connection_pool(write=True).connection_kwargs
    assert kwargs["socket_connect_timeout"] == 0.1 and kwargs["socket_timeout"] == 0.1
    assert kwargs["retry"].get_retries() == 0


def test_it_answers_misses_for_a_dead_cache_and_stops_calling_it():
    cache = resilient("redis://127.0.0.1:1/7")
    cache.breaker.reset()
    assert cache.get("k", "default") == "default"
    assert cache.add("k", 1) is False and cache.set("k", 1) is None
    assert not cache.available
    calls = []
    cache._cache.get_client = lambda *a, **k: calls.append(1)  # noqa: ARG005
    assert cache.get("k") is None and calls == []  # the breaker is open: not even tried
    with strict(), pytest.raises(CacheUnavailable):
        cache.get("k")


@pytest.fixture
def frozen_redis():
    """A server that accepts connections and never answers, as a stopped Redis process
    whose connections stay open."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_it_times_out_a_frozen_cache_instead_of_holding_the_request(frozen_redis):
    cache = resilient(frozen_redis)
    cache.breaker.reset()
    with strict(), pytest.raises(CacheUnavailable) as raised:
        cache.get("k")
    assert "Timeout" in type(raised.value.__cause__).__name__
    assert not cache.available


@pytest.fixture
def dead_shared_cache(settings):
    from axes.handlers.proxy import AxesProxyHandler

    settings.CACHES = {
        "default": {"BACKEND": "config.cache.ResilientRedisCache", "LOCATION": DEAD_REDIS}
    }
    AxesProxyHandler.get_implementation(force=True)
    caches["default"].breaker.reset()
    yield caches["default"]
    caches["default"].breaker.reset()


@pytest.mark.django_db
def test_it_counts_the_sign_in_lockout_in_the_database_while_the_cache_is_down(
    client, dead_shared_cache
):
    from axes.models import AccessAttempt

    from tests.factories import UserFactory

    UserFactory(username="target")
    codes = [
        client.post("/login/", {"username": "target", "password": "wrong"}).status_code
        for _ in range(5)
    ]
    assert codes == [200, 200, 200, 200, 429]  # the limit holds: never no limit
    assert AccessAttempt.objects.get(username="target").failures_since_start == 5
    assert client.post("/login/", {"username": "target", "password": "x"}).status_code == 429


@pytest.mark.django_db
def test_it_keeps_requests_and_readiness_going_while_the_cache_is_down(
    api, client, dead_shared_cache
):
    """Catalog data (the capabilities) is read from the database; /readyz: degraded, 200."""
    assert api.get("/api/v1/policy/capabilities").status_code == 200
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "cache": "degraded",
        "migrations": "ok",
    }
