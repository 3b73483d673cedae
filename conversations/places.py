"""A place in words — everywhere, with a character, in a conversation or in a scene of one —
worded the same on every page that names one: the memory pages (a record's scope, SPEC §1),
the boundaries page (a rule's scope, §5) and support's explanations.

A conversation is named as people name it: its title, else the day it started, and with whom
when the page is not already about that character ("“Rooftop greenhouse” with Captain Rowan",
"your conversation of 3 Aug 2026 with Captain Rowan"). A conversation that was deleted is
still a place a record or a rule can name: it is said to be deleted, never shown by its id.
Standard library only: `conversations.selectors.conversation_named` words a stored one.
"""

from __future__ import annotations

EVERYWHERE = "everywhere"
# Every scope of a key at once (a forget `everywhere`, F1): wider than "everywhere", which
# is the user-wide scope that a character's or a conversation's own value outranks.
EVERY_SCOPE = "everywhere, with every character and in every conversation"
DELETED = "a conversation that was deleted"
# A scope's kind alone, where the place's names are not at hand (support's reasons).
KIND_WORDS = {
    "user": "everywhere",
    "global": "everywhere",
    "character": "with one character",
    "conversation": "in one conversation",
    "scene": "in one scene",
}


def conversation_words(title: str, started_on: str, with_whom: str | None = None) -> str:
    """A conversation as people name it: “Rooftop greenhouse”, or "your conversation of
    3 Aug 2026" (`started_on`) when it has no title; then "with Captain Rowan" (`with_whom`)
    unless the page is already about them."""
    named = f"“{title}”" if title else f"your conversation of {started_on}"
    return f"{named} with {with_whom}" if with_whom else named


def place_words(
    kind: str, *, character_name: str = "", conversation: str = DELETED, scene: str | None = None
) -> str:
    """A place of `kind` ("*", "user" or "global", "character", "conversation", "scene") in
    words: "everywhere", "with Captain Rowan", "only in “Rooftop greenhouse” with Captain
    Rowan", "only in the “greenhouse” scene of …"; `conversation` is the conversation's words
    (`conversation_words`)."""
    if kind == "*":
        return EVERY_SCOPE
    if kind in ("user", "global"):
        return EVERYWHERE
    if kind == "character":
        return f"with {character_name}"
    if kind == "conversation":
        return f"only in {conversation}"
    return f"only in the “{scene}” scene of {conversation}"
