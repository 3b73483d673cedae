"""The MCP server (SPEC §15 M2, M3): the official SDK's low-level `Server` with our tools.

The SDK speaks the protocol; `run_tool` is ours: the access level, the strict arguments
(`agents.arguments`), a write's second look at its connection inside its own transaction,
and every refusal as a tool error whose structured content is the problem's `code` and
`detail`. An unexpected failure answers `server_error` with the request id and no exception
text; the access log has the tool and the outcome, never a value.

The connection a call acts for comes from the context's `CURRENT`, a function that answers
the live connection or None (set by the HTTP view, which authenticated the request, or by the
stdio command, which authenticates its token again for every call); the tools are synchronous
Django code, run through asgiref's `sync_to_async` on the request's own thread."""

from __future__ import annotations

import contextvars
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import mcp_types as types
from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from mcp.server.lowlevel import Server

from config.errors import DomainError
from config.observability import current_request_id

from . import credentials
from .arguments import ArgumentError, checked
from .models import Connection
from .selectors import Call
from .tools import BY_NAME, TOOLS

log = logging.getLogger("companion.agents")

CURRENT: contextvars.ContextVar[Callable[[], Connection | None]] = contextvars.ContextVar(
    "mcp_connection"
)

INSTRUCTIONS = (
    "The memory of a person's AI companion, shared with you by that person. Look things up "
    "with recall, list_memories and ask; tell it new things with remember or save when you "
    "were allowed to write. What the person corrected or made it forget always wins."
)


@dataclass(frozen=True)
class Answer:
    body: dict
    is_error: bool = False


def _refusal(code: str, detail: str) -> Answer:
    return Answer({"code": code, "detail": detail}, is_error=True)


def _request_id() -> str:
    found = current_request_id()
    return found if found != "-" else str(uuid.uuid4())


def run_tool(current: Callable[[], Connection | None], name: str, arguments) -> Answer:
    """One tool call for the connection `current()` answers, answered, never raised."""
    connection = current()
    if connection is None:
        return _refusal("unauthenticated", "This connection was revoked or has expired.")
    tool = BY_NAME.get(name)
    if tool is None:
        answer = _refusal("not_found", "No such tool.")
    elif not connection.grants(tool.access):
        answer = _refusal(
            "permission_denied", f"This connection was not given {tool.access} access."
        )
    else:
        answer = _guarded(connection, tool, arguments)
    outcome = answer.body["code"] if answer.is_error else "ok"
    log.info(
        "mcp_call connection=%s tool=%s outcome=%s", connection.pk, tool and tool.name, outcome
    )
    return answer


def _guarded(connection: Connection, tool, arguments) -> Answer:
    try:
        args = checked(tool.input_schema, arguments)
        return Answer(_run(connection, tool, args))
    except ArgumentError as exc:
        return _refusal("validation_error", str(exc))
    except DomainError as exc:
        return _refusal(exc.code, exc.detail)
    except Exception as exc:  # a bug: its text may hold private words, so only its type is told
        request_id = _request_id()
        log.error(
            "mcp_tool_failed tool=%s type=%s.%s request_id=%s",
            tool.name,
            type(exc).__module__,
            type(exc).__qualname__,
            request_id,
        )
        return _refusal(
            "server_error", f"Something went wrong on our side (request id {request_id})."
        )


class Revoked(DomainError):
    code = "unauthenticated"


def _run(connection: Connection, tool, args: dict) -> dict:
    if tool.access == "read":
        return tool.run(Call.of(connection), args)
    # M2: a write checks its connection again in its own transaction, the row locked, so a
    # revocation that commits first wins.
    with transaction.atomic():
        if not credentials.still_live(connection):
            raise Revoked("This connection was revoked or has expired.")
        return tool.run(Call.of(connection), args)


def _listed() -> list[types.Tool]:
    return [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.input_schema,
            output_schema=t.output_schema,
            annotations=types.ToolAnnotations(
                read_only_hint=t.access == "read",
                destructive_hint=t.access == "forget",
                open_world_hint=False,
            ),
        )
        for t in TOOLS
    ]


async def _on_list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_listed())


async def _on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    answer = await sync_to_async(run_tool, thread_sensitive=True)(
        CURRENT.get(), params.name, params.arguments
    )
    text = json.dumps(answer.body, cls=DjangoJSONEncoder, ensure_ascii=False)
    body = json.loads(text)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=body, is_error=answer.is_error
    )


def build_server() -> Server:
    return Server(
        "companion-memory",
        version="1",
        instructions=INSTRUCTIONS,
        on_list_tools=_on_list_tools,
        on_call_tool=_on_call_tool,
    )
