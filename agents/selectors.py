"""The reads of connections: a user's list for the page, the characters a connection may act
for, what a call through one may reach and recall, and the names of the connections that
asked for decisions (support's admin)."""

from __future__ import annotations

from dataclasses import dataclass

from conversations.selectors import conversation_list
from memory.selectors.resolution import ContextResolution
from memory.switches import memory_settings_of, prompt_projection
from turns.relevance import query_terms, relevance_order
from turns.storage import LABEL_TERMS

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


@dataclass
class Call:
    connection: Connection
    slugs: frozenset[str] | None  # None: every character
    _conversations: frozenset[str] | None = None

    @property
    def user(self):
        return self.connection.user

    @classmethod
    def of(cls, connection: Connection) -> Call:
        return cls(connection, character_slugs(connection))

    @property
    def provenance(self) -> tuple[str, str]:
        """What the connection's writes store as who told them (SPEC §15 M3): id and name."""
        return (str(self.connection.pk), self.connection.name)

    def conversations(self) -> frozenset[str]:
        """The ids of the conversations a connection for some characters reaches (read once)."""
        if self._conversations is None:
            self._conversations = reachable_conversations(self.user, self.slugs or frozenset())
        return self._conversations


def recalled(ctx, query: str, limit: int) -> list:
    """M3 `recall`: what a prompt for the context would hold (R1–R8 and the user's switches,
    I8), most relevant to `query` first (I6), at most `limit`."""
    result = ContextResolution(ctx)
    prompt = prompt_projection(result.projection, memory_settings_of(ctx.user)).prompt
    order, _ = relevance_order(prompt, query_terms(query), (), LABEL_TERMS)
    return [prompt[i] for i in order[:limit]]


REQUESTER = "connection:"  # DecisionLog.requester of a connection's decisions (SPEC §15 M3)


def requester_of(connection: Connection) -> str:
    return f"{REQUESTER}{connection.pk}"


def requester_names(requesters: set[str]) -> dict[str, str]:
    """The connection's name of each `connection:<id>` requester that still exists (one
    query): registered with support, which shows a decision's requester by name and id."""
    ids = {r.removeprefix(REQUESTER) for r in requesters if r.startswith(REQUESTER)}
    found = Connection.objects.filter(pk__in=[int(i) for i in ids if i.isdigit()])
    return {requester_of(c): c.name for c in found.only("pk", "name")}
