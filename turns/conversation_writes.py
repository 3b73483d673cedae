"""Deleting a conversation (SPEC §7): its messages and turns go, and with them what memory
holds of it — the sources it gave and the records scoped to it."""

from __future__ import annotations

from django.db import transaction

from config.clock import db_now
from config.errors import NotFound
from conversations.models import Conversation
from events import outbox
from memory.deletion import conversation_memory_delete


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
        outbox.record(
            [
                outbox.conversation_deleted(  # V1
                    (user or conversation.user).username,
                    conversation=str(conversation.pk),
                    at=db_now(),
                )
            ]
        )
        delete_conversation_rows(conversation)


def delete_conversation_rows(conversation: Conversation) -> None:
    conversation_memory_delete(conversation)
    conversation.delete()
