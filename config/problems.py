"""Every problem the API can answer (SPEC §10 C3): one list of codes — each with its status,
title and an explanation — from which the schema documents each operation's problems and the
documentation pages `/problems/<code>` (the `type` URI of every problem) are drawn. A test
checks that every code the API raises is in the list."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.settings import api_settings

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


@dataclass(frozen=True)
class ProblemCode:
    status: int
    title: str
    explanation: str
    what_to_do: str


PROBLEM_CODES: dict[str, ProblemCode] = {
    "validation_error": ProblemCode(
        400,
        "Invalid input",
        "The request's body, query or path was not valid: a field the operation does not "
        "define, a value of the wrong type, outside its range or length, not matching its "
        "pattern, or a reference (a user, a character, a conversation, a capability…) that "
        "does not exist. `errors` maps each field (dotted for nested fields, such as "
        "`scope.character` or `memories.3.valid_from`) to what is wrong with it. Nothing was "
        "stored (SPEC C2).",
        "Fix the fields named in `errors` and send the request again.",
    ),
    "unauthenticated": ProblemCode(
        401,
        "Authentication required",
        "The request carried no `Authorization: Bearer <token>` header, or its token is "
        "unknown or was revoked. The API never accepts a browser session.",
        "Send a valid token; create one with `manage.py create_api_token NAME`.",
    ),
    "permission_denied": ProblemCode(
        403,
        "Permission denied",
        "The caller is not allowed to do this.",
        "Use a runtime token; the API does not act for signed-in people.",
    ),
    "not_found": ProblemCode(
        404,
        "Not found",
        "The object the path names (a user, a memory, a turn, a rule, a media job…) does not "
        "exist, or the path matches no operation.",
        "Check the id in the path; a deleted object does not come back.",
    ),
    "method_not_allowed": ProblemCode(
        405,
        "Method not allowed",
        "The path exists but does not take this HTTP method.",
        "Use a method the schema lists for the path.",
    ),
    "not_acceptable": ProblemCode(
        406,
        "Not acceptable",
        "The `Accept` header asks for a media type the API does not answer.",
        "Accept `application/json` (errors come as `application/problem+json`).",
    ),
    "conflict": ProblemCode(
        409,
        "Conflict",
        "The request is valid but conflicts with the object's current state: a memory that is "
        "no longer current, a media job that never ran, a turn key reused with other content.",
        "Read the object again and decide from its current state.",
    ),
    "idempotency_key_reused": ProblemCode(
        409,
        "Idempotency key reused with another payload",
        "The same idempotency key was sent before with a different request (SPEC W2).",
        "Use a new idempotency key for a new request; repeat a request only unchanged.",
    ),
    "authority_conflict": ProblemCode(
        409,
        "Authority conflict",
        "An explicit `supersedes` would overrule a record of higher authority (SPEC W6).",
        "Write with an authority at least that of the record, or do not supersede it.",
    ),
    "import_conflict": ProblemCode(
        409,
        "Import conflict",
        "A row of the export file has an id already present with other content, or a key whose "
        "cardinality differs from the registry's (SPEC §9). Nothing was imported.",
        "Import into a clean user, or remove the conflicting rows from the export file.",
    ),
    "message_withheld": ProblemCode(
        409,
        "Message withheld",
        "The turn's own message is withheld: a forget made after the turn was created "
        "withholds it (SPEC F6, F7.1), so no prompt plan may hold it. `turn` is the turn's id; "
        "the problem never repeats the message. A reply committed to that turn is stored "
        "withheld and answered with `withheld: true` and `content: null`.",
        "Do not prompt the model with this turn: start a new turn with the user's next message.",
    ),
    "memory_off": ProblemCode(
        409,
        "Memory is switched off",
        "The user switched memory use off (SPEC I8): an assistant connected over MCP asked what "
        "is remembered (`recall`, `list_memories`, `ask`), and nothing remembered may be "
        "used. Only an assistant's tools answer it (§15 M3); the runtime's API answers with an "
        "empty memory section instead.",
        "Go on without memories; the user can switch memory use back on in their settings.",
    ),
    "cursor_expired": ProblemCode(
        410,
        "Cursor expired",
        "The feed cursor passed as `after` is older than the time events are kept "
        "(`EVENTS_RETENTION_DAYS`, 7 days by default, SPEC V2): events after it may have been "
        "pruned, so following it could miss some.",
        "Resync the copy from the user's export (`GET /users/{user}/export`), then follow the "
        "feed again from the beginning of what is kept (no `after`).",
    ),
    "payload_too_large": ProblemCode(
        413,
        "Payload too large",
        "The request body is larger than the operation accepts.",
        "Send a smaller body (an export file may be larger than other requests).",
    ),
    "unsupported_media_type": ProblemCode(
        415,
        "Unsupported media type",
        "The body is not `application/json`.",
        "Send JSON with `Content-Type: application/json`.",
    ),
    "budget_exceeded": ProblemCode(
        422,
        "Budget exceeded",
        "The current message alone does not fit in the token budget beside the memory "
        "section (SPEC I3). `needed_tokens` and `available_tokens` say by how much; when the "
        "plan was asked for with a new turn, the turn stays created and `turn` is its id.",
        "Plan again with a larger `budget` or a smaller `memory_share`.",
    ),
    "throttled": ProblemCode(
        429,
        "Too many requests",
        "The token made more requests than its rate allows. `Retry-After` (and "
        "`retry_after`, in seconds) says when to try again.",
        "Wait `retry_after` seconds, then repeat the request.",
    ),
    "server_error": ProblemCode(
        500,
        "Server error",
        "Something failed unexpectedly on the server. Nothing about the request was wrong; "
        "`request_id` (also in the `X-Request-ID` header) finds the failure in the error log.",
        "Repeat the request later; quote the `request_id` when reporting it.",
    ),
    "unavailable": ProblemCode(
        503,
        "Service unavailable",
        "A dependency (the database or the cache) is unavailable for the moment (SPEC O5). "
        "`retry_after` says when to try again.",
        "Wait `retry_after` seconds, then repeat the request.",
    ),
}

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
