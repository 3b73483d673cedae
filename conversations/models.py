import uuid
from functools import reduce
from operator import or_

from django.conf import settings
from django.db import models
from django.db.models import Q

from .scopes import SCOPE_REFERENCES, Scope


def scope_shapes(widest: str) -> Q:
    """The check of a stored scope (SPEC §1 for memory, §6 for policy, with `widest` its widest
    kind, `user` or `global`): each kind with exactly the references `SCOPE_REFERENCES` gives
    it set and the others null."""
    return reduce(
        or_,
        (
            Q(
                scope_kind=kind,
                **{
                    f"{reference}__isnull": reference not in SCOPE_REFERENCES[kind]
                    for reference in ("character", "conversation", "scene")
                },
            )
            for kind in (widest, "character", "conversation", "scene")
        ),
    )


def scope_character():
    """A stored scope's character (SPEC §1, §6): set for a character, conversation or scene
    scope, null for the widest. A character that scopes name is not deleted."""
    return models.ForeignKey(
        "conversations.Character", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )


def scope_conversation():
    """A stored scope's conversation: set for a conversation or scene scope. Deleting the
    conversation deletes what is scoped to it (§7)."""
    return models.ForeignKey(
        "conversations.Conversation",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )


def scope_scene():
    """A stored scope's scene: set for a scene scope only."""
    return models.CharField(max_length=100, null=True, blank=True)


class StoredScope:
    """A model whose rows store a scope in the columns above (`scope_kind` and the
    `scope_character()`, `scope_conversation()`, `scope_scene()` fields): a row's `scope`, as
    `scope_type` (`Scope`, or policy's `PolicyScope`). Query-free with the character loaded."""

    scope_type: type[Scope] = Scope

    @property
    def scope(self) -> Scope:
        return self.scope_type.of_columns(self)


class Character(models.Model):
    """A companion persona (catalog data, SPEC §0), identified by its slug."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self) -> str:
        return self.name


class Conversation(models.Model):
    """One user talking with one character (SPEC §0). `last_seq` is the row that message
    sequence numbers are allocated under (a row lock, §7). `messages_removed` is counted up by
    a trigger (`conversations.triggers`) by every statement that deletes some of its messages:
    what a process holding its history checks (`turns.held_history`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    character = models.ForeignKey(Character, on_delete=models.PROTECT, related_name="conversations")
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField()
    last_seq = models.BigIntegerField(default=0, editable=False)
    messages_removed = models.BigIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["-created_at", "id"]
        indexes = [models.Index(fields=["user", "-created_at"])]

    def __str__(self) -> str:
        return self.title or f"Conversation with {self.character_id}"


class Message(models.Model):
    """A chat message. `seq` orders messages within the conversation; timestamps never do."""

    ROLES = [("user", "user"), ("assistant", "assistant"), ("system", "system")]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    seq = models.BigIntegerField()
    role = models.CharField(max_length=10, choices=ROLES)
    content = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["conversation_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="message_seq_unique"),
            models.CheckConstraint(condition=Q(seq__gte=1), name="message_seq_positive"),
        ]

    def __str__(self) -> str:
        return f"message #{self.seq}"


class Turn(models.Model):
    """One exchange, created from a user message with the client's `turn_key` (I1, I4).

    `extracted` keeps the extraction outcomes as ids; `plan_snapshot` keeps the last plan's
    ids and hash (never text) so a past plan can be explained."""

    STATUSES = [("open", "open"), ("replied", "replied")]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    turn_key = models.CharField(max_length=255)
    scene = models.CharField(max_length=100, null=True, blank=True)
    status = models.CharField(max_length=10, choices=STATUSES, default="open")
    user_message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="turn")
    reply_message = models.OneToOneField(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="reply_to"
    )
    created_at = models.DateTimeField()
    extracted = models.JSONField(default=list, blank=True)
    # I8: whether the user's `learn` switch was on when the turn was created (off: nothing
    # was extracted from its message).
    learning = models.BooleanField(default=True)
    plan_snapshot = models.JSONField(null=True, blank=True)
    plan_hash = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["conversation_id", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "turn_key"], name="turn_key_unique"),
        ]

    def __str__(self) -> str:
        return f"turn {self.turn_key}"
