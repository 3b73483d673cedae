import uuid

from django.conf import settings
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

from .domain import (
    DEFAULT_SCOPE_KINDS,
    EFFECTS,
    JOB_STATUSES,
    PRODUCT_DEFAULT,
    REQUESTERS,
    SCOPE_KINDS,
    SOURCES,
    Decision,
    PolicyScope,
    PolicyVersion,
    Rule,
)


def _choices(names):
    return [(n, n) for n in names]


class Capability(models.Model):
    """The capability catalog (SPEC §6), seeded by a data migration. Catalog data: global."""

    name = models.CharField(max_length=100, primary_key=True)
    question = models.CharField(
        max_length=300, help_text="What the companion asks when the decision is ASK."
    )

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "capabilities"

    def __str__(self) -> str:
        return self.name


def _decision_outcome():
    """A decision as a row keeps it (D10): its effect, its reason code and the ids of the rules
    that decided."""
    return (
        models.CharField(max_length=5, choices=_choices(EFFECTS)),
        models.CharField(max_length=30),
        models.JSONField(default=list),
    )


def _policy_version(*, null: bool = False):
    """The policy version a decision was taken at (D7): the product defaults' and the user's."""
    return (
        models.PositiveBigIntegerField(null=null, blank=null),
        models.PositiveBigIntegerField(null=null, blank=null),
    )


class PolicyRule(StoredScope, models.Model):
    """One version of a boundary rule (SPEC §6). Immutable: the services never update a rule
    except to set `revoked_at` once; a change revokes it and creates `successor` (version + 1).
    `user` null is a product default (catalog data) with a global or character scope."""

    scope_type = PolicyScope

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="policy_rules",
    )
    capability = models.ForeignKey(
        Capability, on_delete=models.PROTECT, related_name="rules", db_column="capability"
    )
    effect = models.CharField(max_length=5, choices=_choices(EFFECTS))
    source = models.CharField(max_length=20, choices=_choices(SOURCES))
    scope_kind = models.CharField(max_length=12, choices=_choices(SCOPE_KINDS))
    character = scope_character()
    conversation = scope_conversation()
    scene = scope_scene()
    requested_by = models.CharField(
        max_length=10, null=True, blank=True, choices=_choices(REQUESTERS)
    )
    valid_from = models.DateTimeField()
    valid_until = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    # SET_NULL, not PROTECT: a user or conversation deletion cascades through whole chains.
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="successor"
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["capability", "created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=scope_shapes("global"), name="policy_rule_scope_shape"
            ),
            # A product default has no user and a global or character scope; only it has the
            # product-default source.
            models.CheckConstraint(
                condition=Q(user__isnull=False) | Q(scope_kind__in=DEFAULT_SCOPE_KINDS),
                name="policy_rule_default_scope",
            ),
            models.CheckConstraint(
                condition=Q(user__isnull=True, source=PRODUCT_DEFAULT)
                | (Q(user__isnull=False) & ~Q(source=PRODUCT_DEFAULT)),
                name="policy_rule_default_source",
            ),
            one_of("effect", EFFECTS, "policy_rule_effect_valid"),
            one_of("source", SOURCES, "policy_rule_source_valid"),
            one_of("scope_kind", SCOPE_KINDS, "policy_rule_scope_kind_valid"),
            one_of("requested_by", REQUESTERS, "policy_rule_requested_by_valid", or_null=True),
            models.CheckConstraint(
                condition=Q(valid_until__isnull=True) | Q(valid_until__gt=models.F("valid_from")),
                name="policy_rule_window_not_empty",
            ),
            models.CheckConstraint(
                condition=Q(version__gte=1), name="policy_rule_version_positive"
            ),
        ]
        indexes = [
            # The decision query: user first (the sharding key), then capability.
            models.Index(fields=["user", "capability"], name="policy_rule_user_capability"),
        ]

    def __str__(self) -> str:
        return f"{self.capability_id} {self.effect} ({self.scope_kind}) v{self.version}"

    def to_domain(self) -> Rule:
        """Needs `user` and `character` loaded (select_related) to stay query-free."""
        return Rule(
            id=str(self.pk),
            user=self.user.username if self.user_id else None,
            capability=self.capability_id,
            effect=self.effect,
            source=self.source,
            scope=self.scope,
            requested_by=self.requested_by,
            valid_from=self.valid_from,
            valid_until=self.valid_until,
            revoked_at=self.revoked_at,
            version=self.version,
        )


class UserPolicyVersion(models.Model):
    """D7: the user's policy version; bumped under a row lock in the transaction that creates
    or revokes one of the user's rules. A user without a row is at 0."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="policy_version",
    )
    version = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"policy v{self.version}"


class DefaultsPolicyVersion(models.Model):
    """D7: the product defaults' version: one row (id 1), seeded at 0."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    version = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="policy_defaults_version_singleton")
        ]

    def __str__(self) -> str:
        return f"defaults v{self.version}"


class DecisionLog(models.Model):
    """D10: one row per decision, with an allow-list of fields: ids, codes, versions and times,
    never message or memory text (a test inspects these fields). The scope ids (SPEC §1) say
    which user, character, conversation and scene the decision was for; an answer (D8) finds
    its context through them. `decided_at` is the valid time the decision was made for
    (the database clock unless the context named `now`)."""

    ALLOWED_FIELDS = (
        "id",
        "user",
        "capability",
        "requested_by",
        "effect",
        "reason",
        "rule_ids",
        "defaults_version",
        "user_version",
        "scope_ids",
        "decided_at",
        "requester",
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    capability = models.CharField(max_length=100)
    requested_by = models.CharField(max_length=10, choices=_choices(REQUESTERS))
    effect, reason, rule_ids = _decision_outcome()
    defaults_version, user_version = _policy_version()
    scope_ids = models.JSONField(default=list)
    decided_at = models.DateTimeField()
    # Who asked, beyond `requested_by`'s role: `connection:<id>` for an assistant's MCP
    # connection (SPEC §15 M3), empty for the chat runtime. An id, never a name.
    requester = models.CharField(max_length=60, blank=True, default="")

    class Meta:
        ordering = ["-decided_at", "id"]
        indexes = [models.Index(fields=["user", "-decided_at"], name="policy_decision_user_time")]

    def __str__(self) -> str:
        return f"{self.capability} → {self.effect} ({self.reason})"

    @property
    def policy_version(self) -> PolicyVersion:
        return PolicyVersion(defaults=self.defaults_version, user=self.user_version)

    def to_domain(self) -> Decision:
        return Decision(effect=self.effect, reason=self.reason, rule_ids=tuple(self.rule_ids))


class PolicyAnswer(models.Model):
    """D8: the user's answer to one ASK decision (at most one per decision). Kept apart from
    the decision log so the log stays its allow-list."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    decision = models.OneToOneField(DecisionLog, on_delete=models.CASCADE, related_name="answer")
    answer = models.CharField(max_length=5, choices=_choices(("allow", "deny")))
    remember = models.CharField(
        max_length=12, choices=_choices(("once", "scene", "conversation", "character", "global"))
    )
    rule = models.ForeignKey(
        PolicyRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    media_job = models.ForeignKey(
        "MediaJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    answered_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.answer} ({self.remember})"


class MediaJob(models.Model):
    """D9: an asynchronous media job, admitted with the decision and policy version of that
    moment and decided again when a worker asks to start it. The context is kept as ids so
    `start` can decide for the same user, character, conversation and scene."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="media_jobs"
    )
    idempotency_key = models.CharField(max_length=255)
    capability = models.ForeignKey(
        Capability, on_delete=models.PROTECT, related_name="+", db_column="capability"
    )
    requested_by = models.CharField(max_length=10, choices=_choices(REQUESTERS))
    character = scope_character()
    conversation = scope_conversation()
    scene = scope_scene()
    status = models.CharField(max_length=20, choices=_choices(JOB_STATUSES))
    reason = models.CharField(max_length=40, blank=True, default="")
    # The admission decision (D9), copied here so it outlives decision-log retention.
    decision_id = models.UUIDField()
    decision_effect, decision_reason, decision_rule_ids = _decision_outcome()
    admission_defaults_version, admission_user_version = _policy_version()
    # D8: an answer "allow, once" naming this job: it runs unless the decision at start is deny.
    allowed_once = models.BooleanField(default=False)
    start_decision_id = models.UUIDField(null=True, blank=True)
    start_defaults_version, start_user_version = _policy_version(null=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "idempotency_key"], name="media_job_idempotency_key_unique"
            ),
            one_of("status", JOB_STATUSES, "media_job_status_valid"),
            models.CheckConstraint(
                condition=Q(scene__isnull=True) | Q(conversation__isnull=False),
                name="media_job_scene_needs_conversation",
            ),
            models.CheckConstraint(
                condition=Q(start_defaults_version__isnull=True, start_user_version__isnull=True)
                | Q(start_defaults_version__isnull=False, start_user_version__isnull=False),
                name="media_job_start_version_whole",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.capability_id} job ({self.status})"

    @property
    def decision(self) -> Decision:
        return Decision(
            effect=self.decision_effect,
            reason=self.decision_reason,
            rule_ids=tuple(self.decision_rule_ids),
        )

    @property
    def policy_version_at_admission(self) -> PolicyVersion:
        return PolicyVersion(
            defaults=self.admission_defaults_version, user=self.admission_user_version
        )

    @property
    def policy_version_at_start(self) -> PolicyVersion | None:
        if self.start_defaults_version is None:
            return None
        return PolicyVersion(defaults=self.start_defaults_version, user=self.start_user_version)
