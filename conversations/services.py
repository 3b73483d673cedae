"""Writers for users, characters and conversations (DESIGN habit 2)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from config.clock import db_now
from config.errors import NotFound

from .models import Character, Conversation

User = get_user_model()


def user_put(*, ref: str, email: str = "") -> tuple[User, bool]:
    """PUT /users/{user}: create the user if needed (201) or return it (200). API-created users
    have no usable password until one is set (they sign in to the pages once it is)."""
    from memory.services import ensure_profile

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
        ensure_profile(user)
    return user, created


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
    return Conversation.objects.create(user=user, character=character, title=title, created_at=db_now())


def conversation_delete(*, conversation_id, user=None) -> None:
    """SPEC §7: deleting a conversation deletes its messages and turns; memories keep their
    evidence time but lose those sources (P1 then applies). Scope-bound memories of the
    conversation go with it."""
    qs = Conversation.objects.filter(pk=conversation_id)
    if user is not None:
        qs = qs.filter(user=user)
    with transaction.atomic():
        conversation = qs.select_for_update().first()
        if conversation is None:
            raise NotFound("No such conversation.")
        _delete_conversation_rows(conversation)


def _delete_conversation_rows(conversation: Conversation) -> None:
    from memory.models import MemoryRecord, MemorySource

    MemorySource.objects.filter(message__conversation=conversation).delete()
    # Records scoped to this conversation (or its scenes) cannot outlive it; supersedes edges
    # among them point inside the same set, so clear them before deleting.
    scoped = MemoryRecord.objects.filter(user=conversation.user, conversation=conversation)
    scoped.update(supersedes=None)
    MemoryRecord.objects.filter(user=conversation.user, supersedes__in=scoped).update(supersedes=None)
    scoped.delete()
    conversation.delete()
