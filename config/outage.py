"""A database that cannot be reached answers 503, once logged (SPEC §12 O5).

A connection failure — at connect or in the middle of a request, wherever it surfaces (a view,
the token check, a middleware) — is `django.db.OperationalError` or `InterfaceError` (psycopg's
own errors, should one escape Django's wrapper, too). The request's transaction rolled back,
so it stored nothing or, if it had committed, all: a retry with the same keys is always safe,
and the client is told so:

- the API answers `503` problem `unavailable` with `Retry-After` (seconds, the
  `DATABASE_RETRY_AFTER` setting, 2 by default) and the same number as `retry_after`;
- pages answer the styled 503 page (`templates/503.html`, rendered without the request or
  the database), with the same header.

**One log line per outage, per process.** The first refused request of an episode logs
`database_unavailable` (WARNING, logger `companion.outage`) with the error's type, never its
message; while it lasts, refusals are only counted; the first request after it that reached
the database logs `database_recovered` with the number refused. Metrics count the refused
responses and the episodes (`config.metrics`).
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.http import HttpResponse
from django.template import loader

from config import metrics
from config.problems import json_problem_response

try:  # PostgreSQL's driver, when installed
    import psycopg

    _DRIVER_ERRORS: tuple[type[BaseException], ...] = (
        psycopg.OperationalError,
        psycopg.InterfaceError,
    )
except ImportError:  # pragma: no cover - SQLite-only installs
    _DRIVER_ERRORS = ()

log = logging.getLogger("companion.outage")

UNAVAILABLE_ERRORS = (OperationalError, InterfaceError, *_DRIVER_ERRORS)

FALLBACK_503 = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Unavailable</title>'
    "</head><body><main><h1>This service is briefly unavailable</h1><p>Nothing was lost: "
    'please try again in a moment, or go to <a href="/">the start '
    "page</a>.</p></main></body></html>"
)


def is_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc` (or what caused it) says the database could not be reached."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, UNAVAILABLE_ERRORS):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def retry_after() -> int:
    return max(1, int(getattr(settings, "DATABASE_RETRY_AFTER", 2)))


class Episodes:
    """This process's outage episodes: logged when one starts and when it ends."""

    def __init__(self):
        self._lock = threading.Lock()
        self.refused = 0
        self.ongoing = False

    def refused_one(self, exc: BaseException) -> None:
        metrics.DATABASE_UNAVAILABLE.inc()
        with self._lock:
            first = not self.ongoing
            self.ongoing, self.refused = True, self.refused + 1
        if first:
            metrics.DATABASE_OUTAGES.inc()
            kind = type(exc)
            log.warning(
                "database_unavailable error=%s.%s retry_after=%d",
                kind.__module__,
                kind.__qualname__,
                retry_after(),
            )

    def answered(self) -> None:
        """A request reached the database: an ongoing episode ends."""
        if not self.ongoing:
            return
        with self._lock:
            if not self.ongoing:
                return
            refused, self.refused, self.ongoing = self.refused, 0, False
        log.warning("database_recovered refused_requests=%d", refused)

    def reset(self) -> None:
        with self._lock:
            self.refused, self.ongoing = 0, False


EPISODES = Episodes()


def unavailable_response(request, exc: BaseException) -> HttpResponse:
    """The 503 the client gets (module docstring); counted, and logged once per episode."""
    EPISODES.refused_one(exc)
    seconds = retry_after()
    if request.path.startswith("/api/"):
        response = json_problem_response(
            503,
            "unavailable",
            "The database cannot be reached right now. Nothing was half-stored: retry with the "
            "same keys after the time in Retry-After.",
            retry_after=seconds,
            request_id=getattr(request, "request_id", "-"),
        )
    else:
        try:
            body = loader.get_template("503.html").render({"retry_after": seconds})
        except Exception:  # the error page must never fail in turn
            body = FALLBACK_503
        response = HttpResponse(body, status=503)
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    response._has_been_logged = True  # not an unhandled error: logged once per episode above
    return response


class QueryWatch:
    """While an episode is ongoing, a request that runs a query successfully ends it."""

    def __init__(self):
        self.succeeded = False

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        self.succeeded = True
        return result


def watch_request(get_response, request):
    """Serve `request`; during an outage, watch whether it reaches the database."""
    if not EPISODES.ongoing:
        return get_response(request)
    watch = QueryWatch()
    with connections["default"].execute_wrapper(watch):
        response = get_response(request)
    if watch.succeeded:
        EPISODES.answered()
    return response
