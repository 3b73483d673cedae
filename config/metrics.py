"""Prometheus metrics (SPEC §12 O3), with `prometheus-client`.

Every label value comes from a closed set the code controls: a URL pattern (never a path), a
method from the standard list, a status code, an effect, a reason code, an exception's type.
No label holds a user, a key, a value, a capability a client made up, or any other text.

Several worker processes (gunicorn): `gunicorn.conf.py` points `PROMETHEUS_MULTIPROC_DIR` at a
fresh directory before any worker starts, so each worker writes its samples to memory-mapped
files there and `/metrics` sums every worker's files (prometheus-client's multiprocess mode;
a dead worker's files are marked by the `child_exit` hook). Without that variable (runserver,
tests) the process's own registry is served.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_REQUESTS = Counter(
    "companion_http_requests",
    "HTTP requests answered, by route pattern, method and status.",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "companion_http_request_duration_seconds",
    "Time to answer a request, by route pattern, method and status.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
RESOLVE_CANDIDATES = Histogram(
    "companion_resolve_candidates",
    "Candidate records read by one resolve (API resolve, plan, ask).",
    buckets=(0, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 100000),
)
POLICY_DECISIONS = Counter(
    "companion_policy_decisions",
    "Policy decisions made, by effect and reason code.",
    ["effect", "reason"],
)
TURNS = Counter("companion_turns", "Turn creations, by outcome (created, replayed).", ["outcome"])
REPLIES = Counter(
    "companion_replies", "Reply commits, by whether the reply was replayed.", ["replayed"]
)
BLOCKED_WRITES = Counter(
    "companion_memory_writes_blocked",
    "Memory writes answered `blocked`, by reason code.",
    ["reason"],
)
UNHANDLED_EXCEPTIONS = Counter(
    "companion_unhandled_exceptions",
    "Exceptions that escaped a view (O1), by exception type.",
    ["type"],
)


def method_label(method: str | None) -> str:
    return method if method in METHODS else "other"


def observe_request(request, status: int, seconds: float, route: str) -> None:
    labels = (route, method_label(request.method), str(status))
    HTTP_REQUESTS.labels(*labels).inc()
    HTTP_LATENCY.labels(*labels).observe(seconds)


def resolve_observed(candidates: int) -> None:
    RESOLVE_CANDIDATES.observe(candidates)


def decision_made(effect: str, reason: str) -> None:
    POLICY_DECISIONS.labels(effect=effect, reason=reason).inc()


def turn_created(created: bool) -> None:
    TURNS.labels(outcome="created" if created else "replayed").inc()


def reply_committed(replayed: bool) -> None:
    REPLIES.labels(replayed="true" if replayed else "false").inc()


def write_blocked(reason: str | None) -> None:
    BLOCKED_WRITES.labels(reason=reason or "unknown").inc()


def exposition() -> tuple[bytes, str]:
    """The Prometheus text of every worker (multiprocess mode) or of this process."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return generate_latest(registry), CONTENT_TYPE_LATEST


# SPEC §12 O5, O6: outages and the degraded cache.
DATABASE_UNAVAILABLE = Counter(
    "companion_database_unavailable_responses",
    "Requests answered 503 because the database could not be reached.",
)
DATABASE_OUTAGES = Counter(
    "companion_database_outages",
    "Outage episodes seen by a process (the first refused request).",
)
CACHE_BREAKER_TRIPS = Counter(
    "companion_cache_breaker_trips",
    "Times the shared cache's circuit breaker opened.",
    ["cache"],
)
THROTTLE_LOCAL = Counter(
    "companion_throttle_local_counts",
    "Throttle hits counted in the process alone because the shared cache was unavailable.",
)
