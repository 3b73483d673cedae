"""`/mcp` (SPEC §15 M2): the SDK's stateless streamable-HTTP server, JSON answers, driven from
a Django view. Each request authenticates its connection (`agents.credentials`), then hands
the request to a fresh `StreamableHTTPSessionManager` as an ASGI call run by asgiref's
`async_to_sync`; the tools come back to this request's thread for the database. No state
outlives the request, so any worker answers any request, under `runserver` and gunicorn alike,
with no second server (docs/DECISIONS.md)."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from config.problems import PROBLEM_CONTENT_TYPE, json_problem_response

from . import credentials
from .server import CURRENT, build_server
from .throttle import wait_for

# Django's ALLOWED_HOSTS already checks the Host header; browsers cannot send the bearer token.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)
_SERVER = build_server()
CHALLENGE = 'Bearer realm="mcp", error="invalid_token"'


def _bearer(request) -> str | None:
    parts = request.headers.get("Authorization", "").split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1]


def _unauthenticated() -> HttpResponse:
    response = json_problem_response(
        401,
        "unauthenticated",
        "A live connection token is required: create one on the Connected assistants page.",
    )
    response["WWW-Authenticate"] = CHALLENGE
    return response


def _scope(request) -> dict:
    headers = []
    for name, value in request.META.items():
        if name.startswith("HTTP_"):
            header = name[5:].replace("_", "-").lower()
        elif name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            header = name.replace("_", "-").lower()
        else:
            continue
        headers.append((header.encode("latin-1"), str(value).encode("latin-1")))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode("latin-1", "replace"),
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1", "replace"),
        "root_path": "",
        "headers": headers,
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.get_host(), 0),
    }


async def _serve(connection, scope: dict, body: bytes) -> tuple[int, list, bytes]:
    CURRENT.set(lambda: connection)
    sent = {"status": 500, "headers": [], "body": []}
    delivered = False

    async def receive():
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]
            sent["headers"] = message.get("headers", [])
        elif message["type"] == "http.response.body":
            sent["body"].append(message.get("body", b""))

    manager = StreamableHTTPSessionManager(
        app=_SERVER, json_response=True, stateless=True, security_settings=_SECURITY
    )
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return sent["status"], sent["headers"], b"".join(sent["body"])


@csrf_exempt
def mcp_view(request):
    raw = _bearer(request)
    connection = credentials.authenticate(raw) if raw else None
    if connection is None:
        return _unauthenticated()
    wait = wait_for(connection)
    if wait is not None:
        response = json_problem_response(
            429, "throttled", "This connection is making too many calls."
        )
        response["Retry-After"] = str(max(1, int(wait)))
        return response
    status, headers, body = async_to_sync(_serve)(connection, _scope(request), request.body)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        header = name.decode("latin-1")
        if header.lower() not in ("content-length", "connection", "transfer-encoding"):
            response[header] = value.decode("latin-1")
    if status >= 400 and not response.get("Content-Type"):
        response["Content-Type"] = PROBLEM_CONTENT_TYPE
    return response
