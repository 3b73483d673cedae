"""The "Connected assistants" page (SPEC §15 M1): create a connection (its token shown once,
in the answer to the form, never stored or put in a message), list them with their last use,
revoke one. Server-rendered; works without scripts."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.clock import db_now
from config.errors import ValidationError
from config.pages import form_errors_from, notify, private_page
from conversations.selectors import character_list

from .forms import ConnectionForm
from .presentation import connection_rows
from .selectors import connections_of
from .services import connection_create, connection_revoke


def _page(request, form, *, created=None, status=200):
    rows = connection_rows(connections_of(request.user), now=db_now())
    return render(
        request,
        "agents/connections.html",
        {"form": form, "connections": rows, "created": created},
        status=status,
    )


@private_page
def connections_view(request):
    """The list and the form; a posted form creates the connection and shows its token."""
    characters = list(character_list())
    if request.method != "POST":
        return _page(request, ConnectionForm(characters=characters))
    form = ConnectionForm(request.POST, characters=characters)
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data
    try:
        created = connection_create(
            user=request.user,
            name=data["name"],
            access=data["access"],
            characters=data["characters"] if data["everyone"] == "chosen" else None,
            days=data["expiry"],
        )
    except ValidationError as exc:
        form_errors_from(form, exc)
        return _page(request, form, status=400)
    return _page(request, ConnectionForm(characters=characters), created=created)


@private_page
@require_POST
def connection_revoke_view(request, connection_id: int):
    connection = connection_revoke(connection_id=connection_id, user=request.user)
    notify(
        request,
        messages.SUCCESS,
        f"“{connection.name}” is disconnected: its token no longer works. "
        "What it told the companion stays until you forget it.",
    )
    return redirect("agents:connections")
