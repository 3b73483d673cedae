"""Writers of the catalog's characters and of conversations (docs/DESIGN.md, habit 2)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from config.clock import db_now

from .models import Character, Conversation


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
