import datetime as dt

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from conversations.models import Character, Conversation, Message


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery")


class CharacterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Character
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"character-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    created_at = factory.LazyFunction(timezone.now)


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation

    user = factory.SubFactory(UserFactory)
    character = factory.SubFactory(CharacterFactory)
    created_at = factory.LazyFunction(timezone.now)


class MessageFactory(factory.django.DjangoModelFactory):
    """A message with the next seq of its conversation (tests only; services allocate seq
    under a row lock)."""

    class Meta:
        model = Message

    conversation = factory.SubFactory(ConversationFactory)
    user = factory.LazyAttribute(lambda o: o.conversation.user)
    role = "user"
    content = factory.Sequence(lambda n: f"message {n}")
    created_at = factory.LazyFunction(timezone.now)

    @factory.lazy_attribute
    def seq(self):
        conversation = self.conversation
        current = (
            Conversation.objects.filter(pk=conversation.pk)
            .values_list("last_seq", flat=True)
            .first()
            or 0
        )
        conversation.last_seq = current + 1
        Conversation.objects.filter(pk=conversation.pk).update(last_seq=conversation.last_seq)
        return conversation.last_seq


def at(text: str) -> dt.datetime:
    """`at("2026-08-05T12:00")` → an aware UTC datetime, for readable tests."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def user_facts(user, n: int, *, value=lambda i: f"v{i}", now=None) -> list:
    """`n` rule-extracted user-scope memories `fact.k0` … of `user`, written in bulk (the
    worlds the constant-query tests grow), each valid from `now` (the database clock)."""
    from config.clock import db_now
    from memory.models import MemoryRecord

    now = now or db_now()
    return MemoryRecord.objects.bulk_create(
        [
            MemoryRecord(
                user=user,
                key=f"fact.k{i}",
                value=value(i),
                scope_kind="user",
                scope_id=f"user:{user.username}",
                valid_from=now,
                recorded_at=now,
                evidence_time=now,
                version=1,
                authority="rule-extracted",
            )
            for i in range(n)
        ]
    )
