"""The reads of connections: a user's list for the page, the characters a connection may act
for, and the names of the connections that asked for decisions (support's admin)."""

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


REQUESTER = "connection:"  # DecisionLog.requester of a connection's decisions (SPEC §15 M3)


def requester_of(connection: Connection) -> str:
    return f"{REQUESTER}{connection.pk}"


def requester_names(requesters: set[str]) -> dict[str, str]:
    """The connection's name of each `connection:<id>` requester that still exists (one
    query): registered with support, which shows a decision's requester by name and id."""
    ids = {r.removeprefix(REQUESTER) for r in requesters if r.startswith(REQUESTER)}
    found = Connection.objects.filter(pk__in=[int(i) for i in ids if i.isdigit()])
    return {requester_of(c): c.name for c in found.only("pk", "name")}
