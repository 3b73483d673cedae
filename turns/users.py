"""The users of the service as the runtime names them (SPEC §9, §10): created on first use by
`PUT /users/{user}` and erased whole by `DELETE /users/{user}`."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from config.clock import db_now
from conversations.models import Conversation
from events import outbox
from memory.deletion import user_memory_unlink
from memory.services import ensure_profile
from support.models import SupportAction
from support.reveals import reveals_forget_user

from .conversation_writes import delete_conversation_rows

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
        ensure_profile(user)
    return user, created


def user_delete(*, user) -> None:
    """DELETE /users/{user}: erase everything of that user synchronously (SPEC §9). Memory
    rows go first so supersedes edges between them never block the cascade."""
    with transaction.atomic():
        for conversation in Conversation.objects.filter(user=user):
            delete_conversation_rows(conversation)
        user_memory_unlink(user)
        # Support's notes about this user go too: a staff-written reason may quote them.
        SupportAction.objects.filter(subject_id=user.pk).delete()
        # S2: the reveals and the access log stay, the user replaced by a pseudonym.
        reveals_forget_user(user=user)
        outbox.user_deleted(user.username, at=db_now())  # V1: its events go, one remains
        user.delete()
