import secrets
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from config.model_checks import one_of
from conversations.models import (
    StoredScope,
    scope_character,
    scope_conversation,
    scope_scene,
    scope_shapes,
)

from .domain import AUTHORITIES, CARDINALITIES, STATUSES

FORGOTTEN_BY = ("user", "support")


def _choices(names):
    return [(n, n) for n in names]


def validate_template(template: str) -> None:
    """A sentence template holds `{value}` exactly once and no other braces."""
    if template and (
        template.count("{value}") != 1
        or "{" in template.replace("{value}", "")
        or "}" in template.replace("{value}", "")
    ):
        raise ValidationError(
            "Write {value} exactly once, where the value goes, and no other braces."
        )


class KeyDefinition(models.Model):
    """The key registry (SPEC §1): cardinality and a human label. Unregistered keys are `one`."""

    key = models.CharField(max_length=120, primary_key=True)
    cardinality = models.CharField(max_length=4, choices=_choices(CARDINALITIES), default="one")
    label = models.CharField(max_length=200)
    # The pages' sentence for a value of this key ("Your basil plant is called {value}");
    # blank: the pages show the label and the value apart.
    template = models.CharField(
        max_length=200,
        blank=True,
        default="",
        validators=[validate_template],
        help_text="A sentence for the pages with {value} once, e.g. “Your basil plant is called "
        "{value}”. "
        "Leave blank to show the label and the value apart.",
    )
    pinned = models.BooleanField(
        default=False,
        help_text="I6: memories of a pinned key enter a plan ordered by relevance before any "
        "other.",
    )

    class Meta:
        ordering = ["key"]
        verbose_name = "memory key"
        constraints = [
            one_of("cardinality", CARDINALITIES, "key_cardinality_valid"),
        ]

    def __str__(self) -> str:
        return self.key


SETTINGS_CHANGED_BY = ("user", "api", "support")


class MemoryProfile(models.Model):
    """Per-user memory state: the random secret that keys value hashes (F1); the user's two
    memory switches (I8): `learn` (new memories may be learned from messages) and `use`
    (memories may enter prompts), both on by default, with who changed them last and when; and
    the time zone the pages show times in (blank: the product's, `settings.TIME_ZONE`). It is
    the user's data, exported with it and deleted with it. A user without a profile has both
    switches on."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_profile"
    )
    secret = models.CharField(max_length=64, default=secrets.token_hex, editable=False)
    learn = models.BooleanField(default=True)
    use = models.BooleanField(default=True)
    settings_changed_at = models.DateTimeField(null=True, blank=True)
    settings_changed_by = models.CharField(
        max_length=8, choices=_choices(SETTINGS_CHANGED_BY), blank=True, default=""
    )
    time_zone = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        verbose_name = "memory settings"
        verbose_name_plural = "memory settings"
        constraints = [
            one_of(
                "settings_changed_by",
                ("", *SETTINGS_CHANGED_BY),
                "memory_profile_changed_by_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"memory profile of user {self.user_id}"

    def secret_bytes(self) -> bytes:
        return bytes.fromhex(self.secret)


class MemoryRecord(StoredScope, models.Model):
    """One version of a remembered fact (SPEC §1). Rows are never deleted by the services:
    superseded and expired rows stay, forgotten ones become skeletons (F2)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memories"
    )
    key = models.CharField(max_length=120)
    value = models.TextField(max_length=2000)
    scope_kind = models.CharField(
        max_length=12, choices=_choices(("user", "character", "conversation", "scene"))
    )
    character = scope_character()
    conversation = scope_conversation()
    scene = scope_scene()
    scope_id = models.CharField(max_length=255, editable=False)
    status = models.CharField(max_length=10, choices=_choices(STATUSES), default="active")
    status_since = models.DateTimeField(null=True, blank=True)
    authority = models.CharField(
        max_length=16, choices=_choices(AUTHORITIES), default="model-inferred"
    )
    confidence = models.FloatField(default=1.0)
    valid_from = models.DateTimeField()
    valid_until = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField()
    evidence_time = models.DateTimeField()
    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.RESTRICT, related_name="superseded_by"
    )
    retracted_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField()
    # Provenance beside the source messages (SPEC §15 M3): the connection that stored the row,
    # by id and by the name it had then, so the row needs no connection row (empty: none).
    told_by_connection = models.CharField(max_length=36, blank=True, default="")
    told_by_name = models.CharField(max_length=100, blank=True, default="")
    # The user's memory version at which the row last changed (`memory.triggers` writes it).
    changed_version = models.BigIntegerField(default=0, editable=False)
    sources = models.ManyToManyField(
        "conversations.Message", through="MemorySource", related_name="memories", blank=True
    )

    class Meta:
        ordering = ["user", "scope_id", "key", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "scope_id", "key", "version"], name="memory_version_unique"
            ),
            models.CheckConstraint(condition=scope_shapes("user"), name="memory_scope_shape"),
            models.CheckConstraint(
                condition=Q(status="active") | Q(status_since__isnull=False),
                name="memory_status_since",
            ),
            models.CheckConstraint(
                condition=Q(valid_until__isnull=True) | Q(valid_until__gte=models.F("valid_from")),
                name="memory_window_not_inverted",
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0.0, confidence__lte=1.0),
                name="memory_confidence_range",
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="memory_version_positive"),
            one_of("status", STATUSES, "memory_status_valid"),
            one_of("authority", AUTHORITIES, "memory_authority_valid"),
            models.CheckConstraint(
                condition=~Q(value="") | Q(status="forgotten"),
                name="memory_value_only_empty_when_forgotten",
            ),
        ]
        indexes = [
            # The resolver's candidate query: user first, then key (DESIGN: the sharding key).
            models.Index(fields=["user", "key", "scope_id"], name="memory_user_key_scope"),
            models.Index(fields=["user", "scope_id", "key"], name="memory_user_scope_key"),
            # What changed after a version (a state caught up, `memory.state`).
            models.Index(fields=["user", "changed_version"], name="memory_user_changed"),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"


class MemorySource(models.Model):
    """Provenance (SPEC §1): the messages a record was derived from. Deleting a message deletes
    the link; the record's evidence time stays as it was."""

    memory = models.ForeignKey(MemoryRecord, on_delete=models.CASCADE, related_name="source_links")
    message = models.ForeignKey(
        "conversations.Message", on_delete=models.CASCADE, related_name="memory_links"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "message"], name="memory_source_unique")
        ]

    def __str__(self) -> str:
        return f"source of {self.memory_id}"


class Tombstone(models.Model):
    """F1: a forget. Holds no value; a value-level forget holds a keyed hash of it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tombstones"
    )
    scope_id = models.CharField(max_length=255, help_text='A scope id, or "*" for every scope.')
    key = models.CharField(max_length=120)
    value_hash = models.CharField(max_length=64, null=True, blank=True, editable=False)
    forgotten_at = models.DateTimeField()
    blocks_sources_before = models.DateTimeField()
    # Who asked: the user, or support staff on the user's behalf (never the staff's reason,
    # which stays in the support log).
    forgotten_by = models.CharField(max_length=8, choices=_choices(FORGOTTEN_BY), default="user")
    # The user's memory version at which the row last changed (`memory.triggers` writes it).
    changed_version = models.BigIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["-forgotten_at", "id"]
        indexes = [models.Index(fields=["user", "key"], name="tombstone_user_key")]
        constraints = [
            one_of("forgotten_by", FORGOTTEN_BY, "tombstone_forgotten_by_valid"),
        ]

    def __str__(self) -> str:
        return f"forgotten {self.key} ({self.scope_id})"


class SlotRetraction(models.Model):
    """W10 keeps the retraction time for W4: old evidence never brings a retracted value back.
    For a `many` key the value slot is kept as its keyed hash, never as text."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    scope_id = models.CharField(max_length=255)
    key = models.CharField(max_length=120)
    value_hash = models.CharField(max_length=64, blank=True, default="")
    retracted_at = models.DateTimeField()
    # The user's memory version at which the row last changed (`memory.triggers` writes it).
    changed_version = models.BigIntegerField(default=0, editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["user", "key", "scope_id"], name="retraction_user_key_scope")
        ]

    def __str__(self) -> str:
        return f"retraction of {self.key} ({self.scope_id})"


class IdempotencyRecord(models.Model):
    """W2: an idempotency key with the outcome, the record and an HMAC of the payload (never
    the payload itself)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    payload_hmac = models.CharField(max_length=64)
    outcome = models.CharField(max_length=10)
    reason = models.CharField(max_length=40, blank=True, default="")
    record = models.ForeignKey(
        MemoryRecord, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique")
        ]

    def __str__(self) -> str:
        return f"idempotency key ({self.outcome})"


class MemoryVersion(models.Model):
    """A user's memory version: changed by database triggers (`memory.triggers`) in the same
    transaction as any insert, update or delete of the user's records, their source links,
    tombstones or retractions — by the services, the admin, an import, raw SQL or a psql
    session alike. Versions only grow: equal versions mean no such change was committed in
    between, so a process may reuse what it read (`memory.storage`'s cache), and a state kept
    at an older version is caught up with the rows changed after it (`changed_version`) unless
    `removed_version` is newer than it (`memory.state`).

    `user_id` is the owner without a foreign key: a trigger may write it while the user is
    being deleted in the same transaction, and a version outliving its user is harmless (user
    ids are never reused)."""

    user_id = models.BigIntegerField(primary_key=True)
    version = models.BigIntegerField()
    # The version of the user's last change a row's `changed_version` cannot say (a deleted
    # row, a row moved away, a dropped source link, a version row started afresh): a state
    # kept at an older version is read again whole.
    removed_version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"memory version of user {self.user_id}"


class Withholding(models.Model):
    """F6: a forget withholds a message from every later plan. Either a message (its source
    messages and the messages that mention a purged value as whole words) or the reply of a
    turn planned before the forget with what it purged (`turn`: the reply is withheld once it
    is committed, whenever that is — so no interleaving of the forget and the reply leaves it
    out). Holds no value; deleting the tombstone (F4) releases what no other one withholds."""

    tombstone = models.ForeignKey(Tombstone, on_delete=models.CASCADE, related_name="withholdings")
    message = models.ForeignKey(
        "conversations.Message",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="withholdings",
    )
    # No foreign key constraint in the database: a forget writes holds while replies may hold
    # their turn's row (F6 part 3; the constraint's key-share lock would make the forget wait
    # on the reply that waits on the forget). Deleting a turn deletes its holds (Django's
    # cascade), as deleting a conversation or a user does.
    turn = models.ForeignKey(
        "conversations.Turn",
        null=True,
        blank=True,
        db_constraint=False,
        on_delete=models.CASCADE,
        related_name="reply_withholdings",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(message__isnull=False, turn__isnull=True)
                    | Q(message__isnull=True, turn__isnull=False)
                ),
                name="withholding_message_or_reply",
            ),
            models.UniqueConstraint(
                fields=["tombstone", "message"],
                name="withholding_message_unique",
                condition=Q(message__isnull=False),
            ),
            models.UniqueConstraint(
                fields=["tombstone", "turn"],
                name="withholding_reply_unique",
                condition=Q(turn__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"withheld by {self.tombstone_id}"


class MemoryWithholding(models.Model):
    """F7.2: a forget withholds another memory of the user — one whose value, label or key
    holds a value it purged as whole words, with evidence at or before the forget — in the
    contexts the tombstone's scope covers. Holds no value; deleting the tombstone (F4) or the
    user's new evidence for the record after the forget releases it. Writing or deleting a
    link stamps the record (`memory.triggers`), so a held state re-reads it."""

    tombstone = models.ForeignKey(
        Tombstone, on_delete=models.CASCADE, related_name="memory_withholdings"
    )
    memory = models.ForeignKey(MemoryRecord, on_delete=models.CASCADE, related_name="withholdings")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tombstone", "memory"], name="memory_withholding_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"memory withheld by {self.tombstone_id}"
