"""Writers of users, the catalog's characters and conversations (docs/DESIGN.md, habit 2).

Creating a user and deleting a user or a conversation reach what the apps above keep of them
through `conversations.dependents`, which those apps register with."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from config.clock import db_now
from config.errors import NotFound
from events import outbox

from . import dependents
from .models import Character, Conversation

User = get_user_model()


def user_put(*, ref: str, email: str = "") -> tuple[User, bool]:
    """PUT /users/{user}: create the user if needed (201) or return it (200). API-created users
    have no usable password until one is set (they sign in to the pages once it is)."""
    with transaction.atomic():
        user = User.objects.filter(username=ref).first()
        created = False
        if user is None:
            try:
                with transaction.atomic():
                    user = User(username=ref, email=email)
                    user.set_unusable_password()
                    user.save()
                    created = True
            except IntegrityError:
                user = User.objects.get(username=ref)
        dependents.run("user_put", user)  # memory's profile
    return user, created


def user_delete(*, user) -> None:
    """DELETE /users/{user}: erase everything of that user synchronously (SPEC §9). What the
    apps above keep goes first — memory's supersedes edges, which would block the cascade;
    support's notes, while its reveals and access log stay under a pseudonym (S2)."""
    with transaction.atomic():
        for conversation in Conversation.objects.filter(user=user):
            _conversation_rows_delete(conversation)
        dependents.run("user_delete", user)
        outbox.user_deleted(user.username, at=db_now())  # V1: its events go, one remains
        user.delete()


def character_put(*, slug: str, name: str) -> tuple[Character, bool]:
    """PUT /characters/{slug}: create or rename (201 when created, 200 when it existed)."""
    with transaction.atomic():
        character = Character.objects.select_for_update().filter(slug=slug).first()
        if character is not None:
            if character.name != name:
                character.name = name
                character.save(update_fields=["name"])
            return character, False
        try:
            with transaction.atomic():
                return Character.objects.create(slug=slug, name=name, created_at=db_now()), True
        except IntegrityError:
            return Character.objects.get(slug=slug), False


def conversation_create(*, user, character: Character, title: str = "") -> Conversation:
    return Conversation.objects.create(
        user=user, character=character, title=title, created_at=db_now()
    )


def conversation_delete(*, conversation_id, user=None) -> None:
    """SPEC §7: deleting a conversation deletes its messages and turns; memories keep their
    evidence time but lose those sources (P1 then applies). Scope-bound memories of the
    conversation go with it. With `user`, only that user's conversation is found (the
    pages)."""
    qs = Conversation.objects.filter(pk=conversation_id)
    if user is not None:
        qs = qs.filter(user=user)
    with transaction.atomic():
        conversation = qs.select_for_update().first()
        if conversation is None:
            raise NotFound("No such conversation.")
        outbox.record(
            [
                outbox.conversation_deleted(  # V1
                    (user or conversation.user).username,
                    conversation=str(conversation.pk),
                    at=db_now(),
                )
            ]
        )
        _conversation_rows_delete(conversation)


def _conversation_rows_delete(conversation: Conversation) -> None:
    dependents.run("conversation_delete", conversation)  # memory's sources and scoped records
    conversation.delete()
