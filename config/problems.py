"""The problems the API answers, as the API says them (SPEC §10 C3): the problem body, the
schema that documents each operation's problems and the examples, all drawn from the one list
of codes (`config.problem_codes`), which the documentation pages `/problems/<code>` (the
`type` URI of every problem) explain."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.settings import api_settings

from config.problem_codes import PROBLEM_CODES

PROBLEM_CONTENT_TYPE = "application/problem+json"


def problem(
    status: int, code: str, title: str, detail: str, errors=None, headers=None, **extra
) -> dict:
    body = {
        "type": f"/problems/{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
    }
    if errors:
        body["errors"] = errors
    body.update(extra)
    return body


def json_problem_response(status: int, code: str, detail: str, **extra) -> HttpResponse:
    """A problem answered outside the API's views — an unknown path or a malformed id, a body
    refused before a view reads it, a failure, an outage — in the one shape of every problem
    (SPEC §10): the title the registry gives its code, and the bytes of the API's own renderer,
    as a problem a view raises is rendered."""
    body = problem(status, code, PROBLEM_CODES[code].title, detail, **extra)
    renderer = api_settings.DEFAULT_RENDERER_CLASSES[0]()
    return HttpResponse(renderer.render(body), status=status, content_type=PROBLEM_CONTENT_TYPE)


CODE_CHOICES = [(code, code) for code in PROBLEM_CODES]


def code_for_status(status: int) -> str:
    """The first code of a status (`validation_error` for 400 …); `server_error` otherwise."""
    return next((code for code, p in PROBLEM_CODES.items() if p.status == status), "server_error")


def type_uri(code: str) -> str:
    return f"/problems/{code}"


class Problem(serializers.Serializer):
    """An RFC 9457 problem (SPEC §10): `type` is the URI of the page that explains `code`."""

    type = serializers.CharField(help_text="`/problems/<code>`: the page that explains the code.")
    title = serializers.CharField()
    status = serializers.IntegerField(min_value=400, max_value=599)
    detail = serializers.CharField()
    code = serializers.ChoiceField(choices=CODE_CHOICES, help_text="A stable code: see `type`.")
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="`validation_error`: what is wrong with each field, by its dotted name.",
    )
    request_id = serializers.CharField(
        required=False, help_text="`server_error`: the id in `X-Request-ID` and the error log."
    )
    retry_after = serializers.IntegerField(
        required=False, min_value=0, help_text="`throttled`, `unavailable`: seconds to wait."
    )
    turn = serializers.UUIDField(
        required=False,
        help_text="`budget_exceeded` on a turn creation: the turn, created; "
        "`message_withheld`: the turn whose message a forget withholds.",
    )
    needed_tokens = serializers.IntegerField(
        required=False, help_text="`budget_exceeded`: what the current message needs."
    )
    available_tokens = serializers.IntegerField(
        required=False, help_text="`budget_exceeded`: what the budget leaves for it."
    )


def codes_for(status: int) -> list[str]:
    return [code for code, p in PROBLEM_CODES.items() if p.status == status]


_EXAMPLE_EXTRA = {
    "validation_error": {
        "detail": "scope.character: Not allowed for a user scope.",
        "errors": {"scope.character": ["Not allowed for a user scope."]},
    },
    "budget_exceeded": {
        "detail": "The current message needs 40 tokens but only 12 are available (budget 100 "
        "minus 88 for memories).",
        "turn": "6f1d2c3b-4a5e-4f60-8172-93a4b5c6d7e8",
        "needed_tokens": 40,
        "available_tokens": 12,
    },
    "message_withheld": {
        "detail": "The turn's message is withheld by a forget: no prompt plan holds it.",
        "turn": "6f1d2c3b-4a5e-4f60-8172-93a4b5c6d7e8",
    },
    "throttled": {
        "detail": "Request was throttled. Expected available in 12 seconds.",
        "retry_after": 12,
    },
    "unavailable": {"detail": "The database is unavailable.", "retry_after": 5},
    "server_error": {
        "detail": "An unexpected error occurred. Quote the request id when reporting it.",
        "request_id": "0b6a9c1e-2f3d-4e5a-8b7c-6d5e4f3a2b1c",
    },
}


def example(code: str) -> dict:
    p = PROBLEM_CODES[code]
    body = {
        "type": type_uri(code),
        "title": p.title,
        "status": p.status,
        "detail": p.title + ".",
        "code": code,
    }
    body.update(_EXAMPLE_EXTRA.get(code, {}))
    return body


def _description(status: int) -> str:
    return (
        "Problem: "
        + ", ".join(f"`{code}` ({PROBLEM_CODES[code].title.lower()})" for code in codes_for(status))
        + "."
    )


def response(status: int) -> OpenApiResponse:
    return OpenApiResponse(
        Problem,
        description=_description(status),
        examples=[
            OpenApiExample(
                code,
                value=example(code),
                status_codes=[str(status)],
                media_type=PROBLEM_CONTENT_TYPE,
            )
            for code in codes_for(status)
        ],
    )


def responses(*statuses: int) -> dict:
    """`responses=` entries for the problems an operation can answer: the statuses given and
    401 and 429, which every operation can answer (a token; a rate per token). 500 is added
    to every operation by the schema's postprocessing (`document`)."""
    return {
        (status, PROBLEM_CONTENT_TYPE): response(status) for status in sorted({401, 429, *statuses})
    }


def document(result: dict) -> None:
    """C3: every operation also documents 500 `server_error`, and an operation that reads a
    body documents 415 (a body that is not JSON) and 400 (a body that is not valid JSON)."""
    ref = {"$ref": "#/components/schemas/Problem"}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            wanted = [500]
            if "requestBody" in operation:
                wanted += [400, 415]
            for status in wanted:
                if str(status) in operation["responses"]:
                    continue
                operation["responses"][str(status)] = {
                    "description": _description(status),
                    "content": {
                        PROBLEM_CONTENT_TYPE: {
                            "schema": ref,
                            "examples": {
                                code: {"value": example(code), "summary": PROBLEM_CODES[code].title}
                                for code in codes_for(status)
                            },
                        }
                    },
                }
            operation["responses"] = dict(sorted(operation["responses"].items()))
