"""Every problem the API can answer (SPEC §10 C3): the one list of codes, each with its
status, title and an explanation. Standard library only, so the domain errors
(`config.errors`) take their status and title from it; `config.problems` draws from it the
schema's problems and the documentation pages `/problems/<code>`. A test checks that every
code the API raises is in the list."""

from __future__ import annotations

from dataclasses import dataclass


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
