"""Refuse what no API view should see: oversized bodies before anything reads them (DRF parses
JSON from the request stream, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE alone would not stop a
huge body), and path parameters that do not match their schema before any view queries with
them (C7)."""

import re

from django.conf import settings

from config.problems import json_problem_response
from config.schema import PATH_PARAMETERS


class ApiBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_problem_response(400, "validation_error", "Invalid Content-Length.")
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if request.path.endswith("/import"):
                limit = settings.IMPORT_MAX_BYTES
            if length > limit:
                return json_problem_response(
                    413, "payload_too_large", f"The body is larger than {limit} bytes."
                )
        return self.get_response(request)


def path_parameter_error(name: str, value) -> str | None:
    """Why the path parameter `name` cannot hold `value` by its schema (`config.schema.
    PATH_PARAMETERS`, the table the OpenAPI document shows), or None. Parameters the table
    does not hold are typed by their route's converter (`<uuid:…>`)."""
    schema = PATH_PARAMETERS.get(name)
    if schema is None:
        return None
    low, high = schema["minLength"], schema["maxLength"]
    if not isinstance(value, str) or not low <= len(value) <= high:
        return f"Must be {low}–{high} characters long."
    if re.fullmatch(schema["pattern"], value) is None:
        return f"Must match {schema['pattern']}."
    return None


class ApiPathParameterMiddleware:
    """C7: every path parameter of an API route is checked against its schema before the view
    runs, so no query ever sees a NUL, an over-long slug or the escapes of bytes that are not
    UTF-8. Such a parameter names nothing: a 404 — except in a PUT to the URL it ends, which
    would create what it names (`PUT /users/{user_ref}`), where it is a 400
    `validation_error` naming the parameter."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not request.path.startswith("/api/v1/"):
            return None
        for name, value in view_kwargs.items():
            error = path_parameter_error(name, value)
            if error is None:
                continue
            route = getattr(request.resolver_match, "route", "")
            if request.method == "PUT" and route.endswith(f":{name}>"):
                return json_problem_response(
                    400,
                    "validation_error",
                    f"{name}: {error}",
                    errors={name: [error]},
                )
            return json_problem_response(404, "not_found", "No such resource.")
        return None
