"""The reads of connections: a user's list for the page, and the characters a connection may
act for."""

from __future__ import annotations

from .models import Connection


def connections_of(user) -> list[Connection]:
    """The user's connections, newest first, with their characters (two queries)."""
    return list(Connection.objects.filter(user=user).prefetch_related("characters"))


def character_slugs(connection: Connection) -> frozenset[str] | None:
    """The slugs a connection may act for, or None for every character."""
    if connection.all_characters:
        return None
    return frozenset(connection.characters.values_list("slug", flat=True))
