from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from . import views

# The end user's page, under /assistants/ (namespace `agents`).
pages = [
    path("", views.connections_view, name="connections"),
    path("<int:connection_id>/revoke", views.connection_revoke_view, name="revoke"),
]


@csrf_exempt
def mcp_view(request):
    """`/mcp` (SPEC §15 M2): the endpoint assistants connect to. The MCP SDK behind it
    (`agents.transport`) takes about a second to import, so it is imported by the first call
    rather than by every process that loads the URLs (each management command, each worker,
    `make run`'s steps)."""
    from . import transport

    return transport.mcp_view(request)
