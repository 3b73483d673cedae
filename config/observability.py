"""What an operator sees (SPEC §12 O1–O3): a request id on every response and in every log
line, every unhandled exception logged once, and request metrics.

One middleware, first in `MIDDLEWARE` so that every response passes through it — redirects
and refusals of the other middlewares included:

- **O1 request id.** A valid incoming `X-Request-ID` (1–128 characters of letters, digits and
  `._:-`) is kept, anything else is replaced by a new UUID. It is on `request.request_id`, in
  the `X-Request-ID` response header, on every log record of the project's handler
  (`RequestIdFilter`) and in the 500 page's template context.
- **O1 errors.** An exception a view lets escape is logged once on `companion.errors` at
  ERROR: its type, the route name, the method, the request id and where it was raised (file,
  line and function of each frame). Never the exception's message, the body or the query
  string: a message can quote input (an integrity error names the values it refused). The
  client gets the problem+json 500 with the `request_id` on API paths and the 500 page
  elsewhere. Django's own "Internal Server Error" record is suppressed for these responses,
  so each exception is logged exactly once. With `DJANGO_DEBUG` on, pages keep Django's
  debug page (it is logged here too); API paths always answer problem+json.
- **O5 outages.** A database that cannot be reached is no bug: the request answers 503
  (`config.outage`), logged once per outage episode instead of once per request.
- **O3 metrics.** Request counts and latency per route pattern (`api/v1/memories/<uuid:
  memory_id>`, never the path itself), method and status; see `config.metrics`.
"""

from __future__ import annotations

import contextvars
import logging
import re
import sys
import time
import traceback
import uuid
from pathlib import Path

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponse
from django.http.multipartparser import MultiPartParserError

from config import metrics, outage
from config.error_pages import server_error_page
from config.problems import json_problem_response

errors_log = logging.getLogger("companion.errors")

# What Django itself turns into 4xx answers (django.core.handlers.exception).
CLIENT_ERRORS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation, MultiPartParserError)

REQUEST_ID_HEADER = "X-Request-ID"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_BASE = str(Path(settings.BASE_DIR)) + "/"


def incoming_request_id(value: str | None) -> str:
    """O1: a valid incoming id is kept, else a new UUID."""
    if value and _VALID_REQUEST_ID.match(value):
        return value
    return str(uuid.uuid4())


def current_request_id() -> str:
    return _current_request_id.get()


class RequestIdFilter(logging.Filter):
    """Puts the request id of the request being served on every record (`-` outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _current_request_id.get()
        return True


def is_api_path(path: str) -> bool:
    return path.startswith("/api/")


def route_name(request) -> str:
    """The name of the matched route (`memory_api:resolve`), or its pattern; `-` when no route
    matched. Never the path: a path holds user refs and ids."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "-"
    return match.view_name or match.route or "-"


def route_pattern(request) -> str:
    """The metrics label: the URL pattern that matched (bounded), or `unmatched`."""
    match = getattr(request, "resolver_match", None)
    if match is None or not match.route:
        return "unmatched"
    return match.route


def _where(tb) -> str:
    frames = traceback.extract_tb(tb)[-12:]
    return " < ".join(
        f"{f.filename.removeprefix(_BASE)}:{f.lineno}:{f.name}" for f in reversed(frames)
    )


def report_exception(request, exc: BaseException) -> None:
    """O1: log one unhandled exception once: type, route, method, request id and the frames it
    came through — never its message, the body or the query string."""
    if getattr(request, "_companion_exception_logged", False):
        return
    request._companion_exception_logged = True
    kind = type(exc)
    errors_log.error(
        "unhandled_exception type=%s.%s route=%s method=%s request_id=%s at=%s",
        kind.__module__,
        kind.__qualname__,
        route_name(request),
        metrics.method_label(request.method),
        getattr(request, "request_id", current_request_id()),
        _where(exc.__traceback__),
    )
    metrics.UNHANDLED_EXCEPTIONS.labels(type=f"{kind.__module__}.{kind.__qualname__}").inc()


def server_error_response(request) -> HttpResponse:
    """The 500 the client gets: problem+json with the request id on API paths, the 500 page
    (with `request_id` in its context) elsewhere. Marked as logged, so Django does not log the
    same failure a second time."""
    request_id = getattr(request, "request_id", current_request_id())
    if is_api_path(request.path):
        response = json_problem_response(
            500,
            "server_error",
            "An unexpected error occurred. Quote the request id when reporting it.",
            request_id=request_id,
        )
    else:
        response = server_error_page(request_id if request_id != "-" else "")
    response[REQUEST_ID_HEADER] = request_id
    response._has_been_logged = True  # django.utils.log.log_response: logged once, above
    return response


def handle_uncaught(request) -> HttpResponse:
    """handler500: an exception outside a view (a middleware's). Logged here once."""
    exc = sys.exc_info()[1]
    if outage.is_unavailable(exc):
        return outage.unavailable_response(request, exc)  # O5: an outage, not a bug
    if exc is not None:
        report_exception(request, exc)
    return server_error_response(request)


class ObservabilityMiddleware:
    """O1 and O3 for every request (see the module docstring). First in MIDDLEWARE."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = incoming_request_id(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id
        token = _current_request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = outage.watch_request(self.get_response, request)
        finally:
            _current_request_id.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        metrics.observe_request(
            request, response.status_code, time.perf_counter() - started, route_pattern(request)
        )
        return response

    def process_exception(self, request, exc):
        if isinstance(exc, CLIENT_ERRORS):
            return None  # Django answers these with a 4xx (404, 403, 400): not a failure
        if outage.is_unavailable(exc):
            return outage.unavailable_response(request, exc)  # O5, also with DJANGO_DEBUG on
        report_exception(request, exc)
        if settings.DEBUG and not is_api_path(request.path):
            return None  # Django's debug page, for the developer at the keyboard
        return server_error_response(request)
