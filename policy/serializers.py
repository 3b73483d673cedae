"""Input and output shapes of the policy API (SPEC §10). Every name is unique across the
project's schema."""

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.serializers import (
    CleanCharField,
    ContextInput,
    StrictSerializer,
    scope_input,
)

from .domain import (
    ANSWERS,
    EFFECTS,
    EXPLAIN_REASONS,
    JOB_STATUSES,
    REMEMBER,
    REQUESTERS,
    SCOPE_KINDS,
    SOURCES,
)

# ---------------------------------------------------------------------------------------------
# Shared pieces


def _choice_field_class(name: str, choices) -> type[serializers.ChoiceField]:
    """A ChoiceField documented with a `pattern` instead of an `enum`: `status` and `kind` are
    also enum names in the memory API with other values, and the schema must not mix them
    (until ENUM_NAME_OVERRIDES names each set)."""
    pattern = "^(" + "|".join(re.escape(choice) for choice in choices) + ")$"
    schema = {
        "type": "string",
        "pattern": pattern,
        "description": "One of: " + ", ".join(choices) + ".",
    }
    return extend_schema_field(schema)(type(name, (serializers.ChoiceField,), {}))


JobStatusField = _choice_field_class("JobStatusField", JOB_STATUSES)
RuleScopeKindField = _choice_field_class("RuleScopeKindField", SCOPE_KINDS)


class PolicyVersionOutput(serializers.Serializer):
    """D7."""

    defaults = serializers.IntegerField()
    user = serializers.IntegerField()


class _DropAbsent(serializers.Serializer):
    """Optional output fields (`question`?, `reason`? …) are left out rather than null."""

    OPTIONAL: tuple[str, ...] = ()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for name in self.OPTIONAL:
            if data.get(name) in (None, ""):
                data.pop(name, None)
        return data


# ---------------------------------------------------------------------------------------------
# Capabilities


class CapabilityOutput(serializers.Serializer):
    name = serializers.CharField()
    question = serializers.CharField()


# ---------------------------------------------------------------------------------------------
# Decisions


class PolicyDecideInput(StrictSerializer):
    context = ContextInput()
    capability = CleanCharField(max_length=100)
    requested_by = serializers.ChoiceField(choices=REQUESTERS)
    explain = serializers.BooleanField(required=False, default=False)


class RuleExplanationOutput(serializers.Serializer):
    rule_id = serializers.CharField()
    reason = serializers.ChoiceField(choices=EXPLAIN_REASONS)
    detail = serializers.CharField()


class DecisionOutput(_DropAbsent):
    """SPEC §10 decision: `{decision_id, effect, reason, rule_ids, policy_version, question?}`;
    `explain` only when it was asked for. Serializes a `services.DecisionOutcome`."""

    OPTIONAL = ("question", "explain")

    decision_id = serializers.UUIDField()
    effect = serializers.ChoiceField(choices=EFFECTS, source="decision.effect")
    reason = serializers.CharField(source="decision.reason")
    rule_ids = serializers.ListField(child=serializers.UUIDField(), source="decision.rule_ids")
    policy_version = PolicyVersionOutput()
    question = serializers.CharField(
        required=False, help_text="The capability's question; only for ask."
    )
    explain = RuleExplanationOutput(
        many=True,
        required=False,
        source="explanation.rules",
        help_text="Why each rule was or was not a candidate; only when asked.",
    )

    def to_representation(self, outcome):
        data = super().to_representation(outcome)
        if outcome.decision.effect != "ask":
            data.pop("question", None)
        return data


# ---------------------------------------------------------------------------------------------
# Rules


RuleScopeInput = scope_input(
    "RuleScopeInput",
    RuleScopeKindField(choices=SCOPE_KINDS),
    widest="global",
    doc='A rule scope: {"kind": "global"} · character · conversation · scene (SPEC §6).',
    module=__name__,
)


class RuleScopeOutput(serializers.Serializer):
    kind = RuleScopeKindField(choices=SCOPE_KINDS)
    character = serializers.CharField(required=False)
    conversation = serializers.UUIDField(required=False)
    scene = serializers.CharField(required=False)


class RuleCreateInput(StrictSerializer):
    user = CleanCharField(
        max_length=150,
        required=False,
        allow_null=True,
        help_text="The user's ref; absent or null makes a product default.",
    )
    capability = CleanCharField(max_length=100)
    effect = serializers.ChoiceField(choices=EFFECTS)
    source = serializers.ChoiceField(choices=SOURCES)
    scope = RuleScopeInput()
    requested_by = serializers.ChoiceField(choices=REQUESTERS, required=False, allow_null=True)
    valid_from = serializers.DateTimeField(required=False, allow_null=True)
    valid_until = serializers.DateTimeField(required=False, allow_null=True)
    replace = serializers.BooleanField(
        required=False,
        default=False,
        help_text="SPEC D11: the user's choice replaces its place. True revokes, in the same "
        "transaction, every live `explicit-user` rule of this user at the same capability and "
        "exact "
        "scope (kind and ids), whatever its `requested_by`, and creates this one; rules at other "
        "places, product defaults and `confirmed-inference` rules are untouched. False (the "
        "default) adds the rule beside them.",
    )


class RuleOutput(serializers.Serializer):
    """SPEC §10 rule. Serializes a `PolicyRule`."""

    id = serializers.UUIDField()
    user = serializers.CharField(source="user.username", allow_null=True)
    capability = serializers.CharField(source="capability_id")
    effect = serializers.ChoiceField(choices=EFFECTS)
    source = serializers.ChoiceField(choices=SOURCES)
    scope = serializers.SerializerMethodField()
    requested_by = serializers.ChoiceField(choices=REQUESTERS, allow_null=True)
    valid_from = serializers.DateTimeField()
    valid_until = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    version = serializers.IntegerField()

    @extend_schema_field(RuleScopeOutput)
    def get_scope(self, rule) -> dict:
        return rule.scope.as_dict()


class RuleListQueryInput(serializers.Serializer):
    """`GET /policy/rules?user=&capability=` (limit and offset are the pagination's)."""

    user = CleanCharField(
        max_length=150,
        required=False,
        help_text="The user whose rules to list; without it, the product defaults.",
    )
    capability = CleanCharField(
        max_length=100,
        required=False,
        help_text="Only the rules of this capability (such as `tone.playful`).",
    )


class RuleRevokeInput(StrictSerializer):
    """No fields: the revocation time is the database clock's."""


# ---------------------------------------------------------------------------------------------
# Media jobs


class MediaJobAdmitInput(StrictSerializer):
    context = ContextInput()
    capability = CleanCharField(max_length=100)
    requested_by = serializers.ChoiceField(choices=REQUESTERS)
    idempotency_key = CleanCharField(max_length=255)


class MediaJobDecisionOutput(serializers.Serializer):
    """The decision a job was admitted with (SPEC §10 decision shape). Serializes a MediaJob."""

    decision_id = serializers.UUIDField()
    effect = serializers.ChoiceField(choices=EFFECTS, source="decision_effect")
    reason = serializers.CharField(source="decision_reason")
    rule_ids = serializers.ListField(child=serializers.UUIDField(), source="decision_rule_ids")
    policy_version = PolicyVersionOutput(source="policy_version_at_admission")
    question = serializers.CharField(
        required=False,
        source="capability.question",
        help_text="The capability's question; only for ask.",
    )

    def to_representation(self, job):
        data = super().to_representation(job)
        if job.decision_effect != "ask":
            data.pop("question", None)
        return data


class MediaJobOutput(_DropAbsent):
    """SPEC §10 media job: `{id, status, capability, decision, policy_version_at_admission,
    policy_version_at_start?, reason?}`."""

    OPTIONAL = ("policy_version_at_start", "reason")

    id = serializers.UUIDField()
    status = JobStatusField(choices=JOB_STATUSES)
    capability = serializers.CharField(source="capability_id")
    decision = MediaJobDecisionOutput(source="*")
    policy_version_at_admission = PolicyVersionOutput()
    policy_version_at_start = PolicyVersionOutput(required=False, allow_null=True)
    reason = serializers.CharField(required=False)


class MediaJobStartInput(StrictSerializer):
    """No fields."""


class MediaJobCompleteInput(StrictSerializer):
    """No fields."""


# ---------------------------------------------------------------------------------------------
# Answers


class PolicyAnswerInput(StrictSerializer):
    decision_id = serializers.UUIDField()
    answer = serializers.ChoiceField(choices=ANSWERS)
    remember = serializers.ChoiceField(choices=REMEMBER)
    media_job = serializers.UUIDField(required=False, allow_null=True)


class PolicyAnswerOutput(serializers.Serializer):
    """D8: the answer, the effect that now applies to the decision, the rule it created (not
    for `once`), the media job it moved, and the policy version after it. Serializes a
    `services.AnswerOutcome`."""

    decision_id = serializers.UUIDField(source="answer.decision_id")
    answer = serializers.ChoiceField(choices=ANSWERS, source="answer.answer")
    remember = serializers.ChoiceField(choices=REMEMBER, source="answer.remember")
    effect = serializers.ChoiceField(choices=EFFECTS)
    rule = RuleOutput(allow_null=True)
    media_job = MediaJobOutput(allow_null=True)
    policy_version = PolicyVersionOutput()
    replayed = serializers.BooleanField()


# ---------------------------------------------------------------------------------------------
# Pages of lists (config.api.Pagination), so the schema shows the envelope exactly.


class _PageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)


class CapabilityPageOutput(_PageOutput):
    results = CapabilityOutput(many=True)


class RulePageOutput(_PageOutput):
    results = RuleOutput(many=True)
