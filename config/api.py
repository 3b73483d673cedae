"""API plumbing shared by every app: Bearer-token authentication, the runtime permission,
pagination, and the one exception handler that turns every error into RFC 9457 problem
details with a stable `code` (SPEC §10, DESIGN habit 4)."""

from __future__ import annotations

import logging
import threading

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions as drf_exceptions
from rest_framework import permissions, serializers
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from config import credentials
from config.errors import DomainError
from config.problem_codes import PROBLEM_CODES
from config.problems import PROBLEM_CONTENT_TYPE, code_for_status, problem
from config.serializers import EmptyQuery, QueryText
from config.throttle import RuntimeThrottle  # noqa: F401  (its old home: tests patch it here)

from .models import ApiToken

log = logging.getLogger("companion.api")


class RuntimeClient:
    """Who is calling: the chat runtime, identified by its token. It acts for every user."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, token: ApiToken):
        self.token = token
        self.pk = None

    def __str__(self) -> str:
        return f"runtime:{self.token.name}"


class BearerTokenAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request):
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() != self.keyword:
            return None
        if len(auth) != 2:
            raise drf_exceptions.AuthenticationFailed("Malformed Authorization header.")
        try:
            raw = auth[1].decode("ascii")
        except UnicodeDecodeError:
            raise drf_exceptions.AuthenticationFailed("Malformed token.") from None
        # The token check (config.credentials): from this process's memory for a few
        # seconds, else one query that brings the catalog version too (config.catalog).
        token = credentials.authenticate(raw)
        if token is None:
            raise drf_exceptions.AuthenticationFailed("Invalid or revoked token.")
        return RuntimeClient(token), token

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer"}


class IsRuntime(permissions.BasePermission):
    """Only a valid runtime token; a browser session never writes (or reads) through the API."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ApiToken)


class Pagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500


def paginated(view, request, rows, present=None):
    """One page of `rows` in the list envelope (SPEC §10). `present` turns the page's rows into
    JSON: a serializer class, a function of the page, or nothing for rows that already are."""
    paginator = Pagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    if present is None:
        data = page
    elif isinstance(present, type) and issubclass(present, serializers.BaseSerializer):
        data = present(page, many=True).data
    else:
        data = present(page)
    return paginator.get_paginated_response(data)


class PageOutput(serializers.Serializer):
    """The envelope of every list (SPEC §10): subclass it with a `results` field so the schema
    shows exactly what `Pagination` answers."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)


_DRF_CODES = {
    drf_exceptions.NotAuthenticated: ("unauthenticated", "Authentication required"),
    drf_exceptions.AuthenticationFailed: ("unauthenticated", "Authentication required"),
    drf_exceptions.PermissionDenied: ("permission_denied", "Permission denied"),
    drf_exceptions.NotFound: ("not_found", "Not found"),
    drf_exceptions.MethodNotAllowed: ("method_not_allowed", "Method not allowed"),
    drf_exceptions.NotAcceptable: ("not_acceptable", "Not acceptable"),
    drf_exceptions.UnsupportedMediaType: ("unsupported_media_type", "Unsupported media type"),
    drf_exceptions.Throttled: ("throttled", "Too many requests"),
    drf_exceptions.ParseError: ("validation_error", "Invalid input"),
    drf_exceptions.ValidationError: ("validation_error", "Invalid input"),
}


def _flatten_errors(data, prefix: str = "") -> dict[str, list[str]]:
    """DRF nests errors like its input; the problem body wants `field.sub: [messages]`."""
    out: dict[str, list[str]] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            name = (
                str(key)
                if not prefix
                else (f"{prefix}.{key}" if key != "non_field_errors" else prefix)
            )
            for k, v in _flatten_errors(value, name).items():
                out.setdefault(k, []).extend(v)
    elif isinstance(data, list):
        if all(not isinstance(item, (dict, list)) for item in data):
            out[prefix or "non_field_errors"] = [str(item) for item in data]
        else:
            for index, item in enumerate(data):
                for k, v in _flatten_errors(
                    item, f"{prefix}.{index}" if prefix else str(index)
                ).items():
                    out.setdefault(k, []).extend(v)
    else:
        out[prefix or "non_field_errors"] = [str(data)]
    return out


flatten_errors = _flatten_errors


def problem_exception_handler(exc, context):
    if isinstance(exc, DomainError):
        body = problem(exc.status, exc.code, exc.title, exc.detail, errors=exc.errors, **exc.extra)
        return Response(body, status=exc.status, content_type=PROBLEM_CONTENT_TYPE)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    if not isinstance(exc, drf_exceptions.APIException):
        return None  # a real bug: let Django log it and answer 500 (see handler500)
    # Any other APIException is named by its status, from the one list of codes (SPEC C3).
    code = code_for_status(exc.status_code)
    title = PROBLEM_CODES[code].title
    for cls in type(exc).__mro__:
        if cls in _DRF_CODES:
            code, title = _DRF_CODES[cls]
            break
    status = exc.status_code
    if isinstance(exc, drf_exceptions.ValidationError):
        errors = _flatten_errors(exc.detail)
        first = next(iter(errors.items()), ("", [""]))
        detail = f"{first[0]}: {first[1][0]}" if first[0] else first[1][0]
        body = problem(400, code, title, detail, errors=errors)
    else:
        body = problem(status, code, title, str(exc.detail))
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    response = Response(body, status=status, content_type=PROBLEM_CONTENT_TYPE, headers=headers)
    return response


# ---------------------------------------------------------------------------------------------
# Schema helpers: every documented error is a problem+json body (config.problems, SPEC C3).

from config.problems import Problem as ProblemOutput  # noqa: E402,F401
from config.problems import responses as problems  # noqa: E402


def operation(operation_id: str, answers: dict, *problem_statuses: int, **schema):
    """The schema of one operation, on its view method: its id, its answers by status
    (`{201: Output, 200: Output}`, `{204: None}`), the statuses of the problems it can answer
    (`problems`: 401 and 429 come with every operation) and its `request=` or `parameters=`.
    `@operation("memory_forget", {200: TombstoneOutput}, 400, 404, request=MemoryForgetInput)`."""
    return extend_schema(
        operation_id=operation_id, responses={**answers, **problems(*problem_statuses)}, **schema
    )


# One validating instance per input serializer and thread (DRF deep-copies a serializer's
# declared fields into every new instance: the nested plan of a turn's input cost more to copy
# than to check). An instance keeps no state of a validation but `initial_data` and the
# results that `_fresh` clears; the project's serializers keep none of their own (their
# `validate…` methods only return), and each thread has its own instance.
_validators = threading.local()
_RESULTS = ("_validated_data", "_errors", "_data")


def _fresh(serializer_class, data):
    cache = _validators.__dict__.setdefault("by_class", {})
    serializer = cache.get(serializer_class)
    if serializer is None:
        serializer = cache[serializer_class] = serializer_class(data=data)
        serializer.fields  # noqa: B018  (bound once, here)
        return serializer
    for name in _RESULTS:
        serializer.__dict__.pop(name, None)
    serializer.initial_data = data
    return serializer


def represented(serializer_class, instance) -> dict:
    """`serializer_class(instance).data` without a new instance's copy of the declared fields:
    the thread's instance of the class represents it (representing keeps no state)."""
    cache = _validators.__dict__.setdefault("representing", {})
    serializer = cache.get(serializer_class)
    if serializer is None:
        serializer = cache[serializer_class] = serializer_class()
    return serializer.to_representation(instance)


def validated(serializer_class, data, **kwargs):
    """Validate input with a serializer; DRF's ValidationError becomes a problem response.
    Without `kwargs` (a context, `many`, `partial`) the thread's instance of the class
    validates it (`_fresh`)."""
    serializer = (
        _fresh(serializer_class, data) if not kwargs else serializer_class(data=data, **kwargs)
    )
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def no_query(request) -> None:
    """An operation that reads no query parameter refuses any, naming it (a 400, C7)."""
    validated(EmptyQuery, query_params(request))


def put_answer(output, instance, created: bool) -> Response:
    """A create-or-update's answer: `instance` in its output shape, 201 when it was created and
    200 when it already existed."""
    return Response(represented(output, instance), status=201 if created else 200)


def query_params(request) -> QueryText:
    """Query parameters as a dict of single values (repeated parameters keep the last), marked
    as text: their fields read the documented spellings (`limit=20`), not JSON types (C7)."""
    return QueryText(request.query_params.items())


import json  # noqa: E402
import re  # noqa: E402

from rest_framework.exceptions import ParseError  # noqa: E402
from rest_framework.exceptions import ValidationError as DRFValidationError  # noqa: E402
from rest_framework.parsers import JSONParser  # noqa: E402
from rest_framework.renderers import JSONRenderer  # noqa: E402

# A JSON text can only produce a surrogate code point through a `\uD800`–`\uDFFF` escape
# (UTF-8 bytes cannot encode one), so bodies without such an escape skip the walk below.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate_path(data) -> str | None:
    """The path (`scope.kind`, `memories.3.sources.0`) of the first string — object keys
    included — that is not valid Unicode (a lone surrogate), or None. Iterative, so any depth
    the JSON decoder accepted is walked without recursion."""
    stack = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _unencodable(value):
                return path or "body"
        elif isinstance(value, dict):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                if _unencodable(key):
                    return f"{path}.<key>" if path else "<key>"
                stack.append((child, item))
        elif isinstance(value, list):
            stack.extend((f"{path}.{i}" if path else str(i), item) for i, item in enumerate(value))
    return None


class SafeJSONParser(JSONParser):
    """Every API body is read here, so this is where input that could turn a 400 into a 500
    is refused, once for every operation:

    - JSON that nests too deeply (it would exhaust Python's recursion limit);
    - bytes that are not UTF-8, and `NaN`/`Infinity` (not JSON);
    - strings that are not valid Unicode: a lone surrogate (`"\\ud800"`) decodes to a Python
      string that no encoder can write, so an error message repeating it (an unknown choice, an
      unknown field name) could not be rendered, and no database could store it. It is refused
      wherever it appears — object keys too — naming the field, and never echoed back.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError("JSON parse error - the body is not UTF-8.") from None
        try:
            data = json.loads(text, parse_constant=json_strict_constant)
        except RecursionError:
            raise ParseError("JSON nested too deeply.") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if _SURROGATE_ESCAPE.search(raw):
            path = lone_surrogate_path(data)
            if path is not None:
                raise DRFValidationError({path: ["Not valid Unicode (a lone surrogate)."]})
        return data


def json_strict_constant(name):
    raise ValueError(f"{name} is not valid JSON.")


class SafeJSONRenderer(JSONRenderer):
    """A backstop for the parser above: should a string that cannot be encoded as UTF-8 ever
    reach a response, it is written with `\\u` escapes (still valid JSON) instead of failing."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            text = json.dumps(
                data, cls=self.encoder_class, ensure_ascii=True, allow_nan=not self.strict
            )
            return text.encode("ascii")
