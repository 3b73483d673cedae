"""The demo scenario. It goes through the real services, like the chat runtime would."""

from datetime import timedelta

from django.contrib.auth import get_user_model

from config.clock import db_now
from memory.domain import Scope
from memory.services import forget_key, memory_assert, memory_correct

from .models import Message
from .services import _delete_conversation_rows, character_put, conversation_create, user_put

User = get_user_model()


def _say(conversation, content, *, role="user", at):
    conversation.last_seq += 1
    conversation.save(update_fields=["last_seq"])
    return Message.objects.create(
        user=conversation.user, conversation=conversation, seq=conversation.last_seq,
        role=role, content=content, created_at=at,
    )


def build(*, username: str, password: str) -> list[str]:
    existing = User.objects.filter(username=username).first()
    if existing is not None:
        for conversation in existing.conversations.all():
            _delete_conversation_rows(conversation)
        existing.delete()
    user, _ = user_put(ref=username)
    user.set_password(password)
    user.save(update_fields=["password"])
    rowan, _ = character_put(slug="captain-rowan", name="Captain Rowan")
    conversation = conversation_create(user=user, character=rowan, title="The rooftop greenhouse")
    now = db_now()
    t0 = now - timedelta(days=3)
    m1 = _say(conversation, "The basil plant is named Harbor.", at=t0)
    first = memory_assert(user=user, key="basil_plant.name", value="Harbor", scope=Scope("user"),
                          authority="rule-extracted", sources=[str(m1.pk)])
    memory_correct(record_id=first.record.id, value="Marlowe", user=user)
    m2 = _say(conversation, "I dislike being rushed.", at=t0 + timedelta(minutes=2))
    memory_assert(user=user, key="user.dislikes", value="being rushed", scope=Scope("user"),
                  authority="rule-extracted", sources=[str(m2.pk)])
    m3 = _say(conversation, "I live in Boston.", at=t0 + timedelta(minutes=4))
    lives = memory_assert(user=user, key="user.lives_in", value="Boston", scope=Scope("user"),
                          authority="rule-extracted", sources=[str(m3.pk)])
    forget_key(user=user, key=lives.record.key, scope_id="*")
    return [
        f"user {username!r}, character 'captain-rowan', conversation {conversation.pk}",
        "basil_plant.name: Harbor, corrected to Marlowe",
        "user.dislikes: being rushed",
        "user.lives_in: forgotten everywhere",
    ]
