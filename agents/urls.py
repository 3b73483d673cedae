from django.urls import path

from . import transport, views

# The end user's page, under /assistants/ (namespace `agents`).
pages = [
    path("", views.connections_view, name="connections"),
    path("<int:connection_id>/revoke", views.connection_revoke_view, name="revoke"),
]

# `/mcp` (SPEC §15 M2): the endpoint assistants connect to.
mcp_view = transport.mcp_view
