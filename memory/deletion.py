"""What deleting a conversation or a user does to memory (SPEC §7, §9): the conversations app
deletes the transcript's rows, memory lets go of what pointed into them first (registered in
`memory.apps` with `conversations.dependents`)."""

from __future__ import annotations

from .models import MemoryRecord, MemorySource


def conversation_memory_delete(conversation) -> None:
    """SPEC §7: memories lose the conversation's messages as sources (they keep their evidence
    time; P1 then applies), and records scoped to the conversation or its scenes go."""
    MemorySource.objects.filter(message__conversation=conversation).delete()
    # Records scoped to this conversation (or its scenes) cannot outlive it; supersedes edges
    # among them point inside the same set, so clear them before deleting.
    scoped = MemoryRecord.objects.filter(user=conversation.user, conversation=conversation)
    scoped.update(supersedes=None)
    MemoryRecord.objects.filter(user=conversation.user, supersedes__in=scoped).update(
        supersedes=None
    )
    scoped.delete()


def user_memory_unlink(user) -> None:
    """SPEC §9: before a user's rows cascade, supersedes edges between their records are
    cleared so none blocks the delete."""
    MemoryRecord.objects.filter(user=user).update(supersedes=None)
