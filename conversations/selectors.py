"""Reads shared by the API, the pages and the services. Every query filters by user first
(SPEC §0: the privacy boundary and the sharding key)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model

from config import catalog
from config.clock import db_now
from config.errors import NotFound, ValidationError
from config.pages import day
from conversations.domain import Context

from . import places
from .models import Character, Conversation, Message, Turn

User = get_user_model()


@dataclass(frozen=True)
class LoadedContext:
    """A validated context (SPEC §0) with its rows, and the pure-core view of it."""

    user: User
    character: Character | None
    conversation: Conversation | None
    scene: str | None
    now: datetime
    now_given: bool

    @property
    def domain(self) -> Context:
        return Context(
            user=self.user.username,
            character=self.character.slug if self.character else None,
            conversation=str(self.conversation.pk) if self.conversation else None,
            scene=self.scene,
            now=self.now,
        )


def user_by_ref(ref: str, *, field: str | None = "user") -> User:
    """The user a ref names. In a body an unknown user is a validation error naming the field;
    in a path (`field=None`) it is a 404."""
    # A ref no user could have (PostgreSQL cannot even compare a NUL) is simply unknown.
    plausible = isinstance(ref, str) and 0 < len(ref) <= 150 and "\x00" not in ref
    # The memory profile comes along (one join): it holds the user's memory switches (I8),
    # which resolve and extraction read.
    user = (
        User.objects.select_related("memory_profile").filter(username=ref).first()
        if plausible
        else None
    )
    if user is None:
        if field is None:
            raise NotFound(f"No user {ref!r}.")
        raise ValidationError(f"Unknown user {ref!r}.", field=field)
    return user


@catalog.cached
def catalog_characters() -> dict[str, Character]:
    """Every character by slug, cached per process while the catalog version holds
    (config.catalog). The instances are shared: read them, never change them."""
    return {c.slug: c for c in Character.objects.all()}


def character_by_slug(slug: str, *, field: str = "character") -> Character:
    """A character by slug: from the process cache in a request (no query when warm), else
    one query."""
    if catalog.active():
        character = catalog_characters().get(slug) if isinstance(slug, str) else None
    else:
        character = Character.objects.filter(slug=slug).first()
    if character is None:
        raise ValidationError(f"Unknown character {slug!r}.", field=field)
    return character


def conversation_of_user(user, conversation_id, *, field: str = "conversation") -> Conversation:
    """W1: a conversation that does not exist, or belongs to another user, is invalid."""
    try:
        conversation_id = uuid.UUID(str(conversation_id))
    except ValueError:
        raise ValidationError("Must be a UUID.", field=field) from None
    conversation = (
        Conversation.objects.select_related("character")
        .filter(user=user, pk=conversation_id)
        .first()
    )
    if conversation is None:
        raise ValidationError("Unknown conversation for this user.", field=field)
    return conversation


def _conversation_with_user(ref, conversation_id) -> Conversation | None:
    """The user's conversation with its user, the user's memory profile and its character (one
    query), or None — also when the ref or the id could name nothing."""
    if not conversation_id or not isinstance(ref, str) or not 0 < len(ref) <= 150 or "\x00" in ref:
        return None
    try:
        conversation_id = uuid.UUID(str(conversation_id))
    except ValueError:
        return None
    return (
        Conversation.objects.select_related("user__memory_profile", "character")
        .filter(user__username=ref, pk=conversation_id)
        .first()
    )


def load_context(data: dict, *, prefix: str = "context") -> LoadedContext:
    """Validate a context dict (already type-checked by `ContextInput`) against the database:
    the user exists; the character exists; the conversation belongs to the user and, when a
    character is named, to that character; a scene needs a conversation. Without `now` the
    database clock is read once (SPEC §0).

    With a conversation, the conversation is read with its user (and memory profile) and its
    character in one query; only when that finds nothing are the user and the conversation
    read one by one, to say which of them is unknown."""
    conversation = _conversation_with_user(data["user"], data.get("conversation"))
    if conversation is not None:
        user = conversation.user
    else:
        user = user_by_ref(data["user"], field=f"{prefix}.user")
        if data.get("conversation"):
            conversation = conversation_of_user(
                user, data["conversation"], field=f"{prefix}.conversation"
            )
    character = None
    if data.get("character"):
        if conversation is not None and conversation.character.slug == data["character"]:
            character = conversation.character
        else:
            character = character_by_slug(data["character"], field=f"{prefix}.character")
    if conversation is not None:
        if character is None:
            character = conversation.character
        elif conversation.character_id != character.pk:
            raise ValidationError(
                "The conversation is with another character.", field=f"{prefix}.conversation"
            )
    scene = data.get("scene") or None
    if scene is not None and conversation is None:
        raise ValidationError("A scene needs a conversation.", field=f"{prefix}.scene")
    now = data.get("now")
    return LoadedContext(
        user=user,
        character=character,
        conversation=conversation,
        scene=scene,
        now=now if now is not None else db_now(),
        now_given=now is not None,
    )


def messages_of_user(user, ids) -> list[Message]:
    return list(Message.objects.filter(user=user, pk__in=list(ids)))


# ---------------------------------------------------------------------------------------------
# What the conversation and data pages read


def conversation_for_page(user, conversation_id) -> Conversation:
    """One of the user's conversations, with its character; another user's is a 404."""
    conversation = (
        Conversation.objects.select_related("character")
        .filter(user=user, pk=conversation_id)
        .first()
    )
    if conversation is None:
        raise NotFound("No such conversation.")
    return conversation


def scenes_of(user) -> list[tuple[str, str]]:
    """The scenes the user's turns were in, as (conversation id, scene), each once, in the
    order they were first used. One query."""
    rows = (
        Turn.objects.filter(user=user, scene__isnull=False)
        .exclude(scene="")
        .order_by("created_at", "id")
        .values_list("conversation_id", "scene")
    )
    return list(dict.fromkeys((str(conversation), scene) for conversation, scene in rows))


def conversations_of(user):
    """The user's conversations, newest first, each with its number of messages."""
    from django.db.models import Count

    return (
        Conversation.objects.filter(user=user)
        .select_related("character")
        .annotate(n_messages=Count("messages"))
        .order_by("-created_at", "id")
    )


# ---------------------------------------------------------------------------------------------
# What the runtime reads back (SPEC §10 C4): one query each, a 404 for what does not exist


def character_get(slug: str) -> Character:
    """`GET /characters/{slug}`: the character, or a 404 (C4)."""
    character = Character.objects.filter(slug=slug).first() if isinstance(slug, str) else None
    if character is None:
        raise NotFound(f"No character {slug!r}.")
    return character


def character_list():
    """`GET /characters`: every character of the catalog, by slug (C4)."""
    return Character.objects.order_by("slug")


def conversation_get(conversation_id) -> Conversation:
    """`GET /conversations/{id}`: the conversation with its user and character in one query,
    or a 404 (C4)."""
    conversation = (
        Conversation.objects.select_related("user", "character").filter(pk=conversation_id).first()
    )
    if conversation is None:
        raise NotFound("No such conversation.")
    return conversation


def conversation_list(user, *, character: Character | None = None):
    """`GET /conversations?user=&character=`: the user's conversations (with one character
    when named), newest first, each with its user and character joined (C4)."""
    qs = Conversation.objects.filter(user=user).select_related("user", "character")
    if character is not None:
        qs = qs.filter(character=character)
    return qs.order_by("-created_at", "-id")


def conversation_named(conversation: Conversation | None, *, with_whom: bool = True) -> str:
    """A stored conversation in the words of `conversations.places` (None: one deleted)."""
    if conversation is None:
        return places.DELETED
    return places.conversation_words(
        conversation.title,
        day(conversation.created_at),
        conversation.character.name if with_whom else None,
    )
