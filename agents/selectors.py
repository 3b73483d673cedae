"""The reads of connections: a user's list for the page, and the characters a connection may
act for."""

from __future__ import annotations

from conversations.selectors import conversation_list

from .models import Connection


def connections_of(user) -> list[Connection]:
    """The user's connections, newest first, with their characters (two queries)."""
    return list(Connection.objects.filter(user=user).prefetch_related("characters"))


def character_slugs(connection: Connection) -> frozenset[str] | None:
    """The slugs a connection may act for, or None for every character."""
    if connection.all_characters:
        return None
    return frozenset(connection.characters.values_list("slug", flat=True))


def reachable_conversations(user, slugs: frozenset[str]) -> frozenset[str]:
    """The ids of the user's conversations with the characters `slugs` (one query)."""
    return frozenset(str(c.pk) for c in conversation_list(user) if c.character.slug in slugs)
