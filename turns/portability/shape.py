"""The export file's shape (SPEC §9), validated with the API's own fields and rules.

`SnapshotInput` checks a whole export file in one pass before anything is written: every field
with the field the API's writes use for it (user refs, character slugs, keys, scopes, choices,
times that are real UTC instants in years 1–9999, integers that fit their columns, no NUL and
no lone surrogate in any string, no `null` inside a list), every row against the rules the
database would enforce (scope shapes, windows, one reply per turn …), and every reference
against the file itself or the catalog (characters, capabilities). Errors name the path of
the field (`memories.3.valid_from`).

The validated rows' representation (`serializer.data`) is the file's canonical form: the
same dicts `turns.portability.rows` writes, which is how an imported row is compared with
a stored one.
"""

from __future__ import annotations

import re

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.clock import known_time_zones
from config.serializers import (
    SCENE_MAX,
    BoundedIntegerField,
    CharacterSlugField,
    CleanCharField,
    ScopeInput,
    StrictSerializer,
    UserRefField,
)
from memory.domain import (
    AUTHORITIES,
    CARDINALITIES,
    KEY_MAX,
    KEY_RE,
    STATUSES,
    VALUE_MAX,
    valid_key,
)
from memory.serializers import StrictBooleanField
from policy.domain import (
    ANSWERS,
    DECISION_REASONS,
    EFFECTS,
    JOB_STATUSES,
    PRODUCT_DEFAULT,
    REMEMBER,
    REQUESTERS,
    SOURCES,
)
from policy.serializers import RuleScopeInput

from .references import FORMATS, check_references, scope_id_error

HASH_RE = re.compile(r"^[0-9a-f]{64}$")


def Time(**kwargs):  # noqa: N802 - a field factory, named like the fields it makes
    """A time: RFC 3339, converted to UTC; an instant outside years 1–9999 in UTC, an impossible
    date or an offset beyond ±24h is refused (DRF's DateTimeField, as the API's writes)."""
    if kwargs.get("allow_null"):
        kwargs.setdefault("default", None)
    return serializers.DateTimeField(**kwargs)


def Text(max_length: int, **kwargs):  # noqa: N802
    return CleanCharField(max_length=max_length, trim_whitespace=False, **kwargs)


def Uuid(**kwargs):  # noqa: N802
    if kwargs.get("allow_null"):
        kwargs.setdefault("default", None)
    return serializers.UUIDField(format="hex_verbose", **kwargs)


def UuidList(**kwargs):  # noqa: N802
    return serializers.ListField(child=Uuid(), default=list, **kwargs)


@extend_schema_field(
    {"type": "string", "minLength": 1, "maxLength": KEY_MAX, "pattern": KEY_RE.pattern}
)
class MemoryKeyField(CleanCharField):
    """A memory key (SPEC §1): what `POST /memories` accepts."""

    def __init__(self, **kwargs):
        super().__init__(max_length=KEY_MAX, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not valid_key(value):
            raise serializers.ValidationError(
                "Not a valid key: 1–120 of a-z 0-9 _ . - with no empty segment."
            )
        return value


@extend_schema_field({"type": "string", "pattern": HASH_RE.pattern})
class HashField(CleanCharField):
    """A keyed hash: 64 lowercase hex digits."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not HASH_RE.match(value):
            raise serializers.ValidationError("Must be 64 lowercase hex digits.")
        return value


class ScopeIdField(CleanCharField):
    """A scope id (SPEC §1) — of the snapshot's user, checked by the snapshot."""

    def __init__(self, *, allow_everywhere: bool = False, **kwargs):
        self.allow_everywhere = allow_everywhere
        super().__init__(max_length=255, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        error = scope_id_error(value, None, allow_everywhere=self.allow_everywhere)
        if error:
            raise serializers.ValidationError(error)
        return value


class _NullsAbsent:
    """The API's scope shapes leave out the references a kind does not have; older snapshots
    wrote them as null. Both are accepted, and the schema says so (`NULLS_ABSENT`)."""

    NULLS_ABSENT = True

    def to_internal_value(self, data):
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not (k != "kind" and v is None)}
        return super().to_internal_value(data)


class MemoryScopeInput(_NullsAbsent, ScopeInput):
    pass


class PolicyScopeInput(_NullsAbsent, RuleScopeInput):
    pass


# ---------------------------------------------------------------------------------------------
# The user object: ONE place for its fields. A new per-user setting joins the export file with
# a field here, a line in `rows.user_object` (export) and one in `rows.user_object_apply`
# (import).


@extend_schema_field({"type": "string", "enum": sorted(known_time_zones())})
class TimeZoneField(CleanCharField):
    """An IANA zone name (`Europe/Berlin`) this service knows, or null: the service's zone."""

    def __init__(self, **kwargs):
        super().__init__(max_length=64, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in known_time_zones():
            raise serializers.ValidationError("Must be an IANA time zone name, or null.")
        return value


class MemorySettingsRow(StrictSerializer):
    """I8: the user's two memory switches and who changed them last, when."""

    learn = StrictBooleanField()
    use = StrictBooleanField()
    changed_at = Time(required=False, allow_null=True, default=None)
    changed_by = serializers.ChoiceField(
        choices=["user", "api", "support"], required=False, allow_null=True, default=None
    )


class SnapshotUserInput(StrictSerializer):
    ref = UserRefField()
    email = serializers.EmailField(required=False, allow_blank=True, default="", max_length=254)
    first_name = Text(150, required=False, allow_blank=True, default="")
    last_name = Text(150, required=False, allow_blank=True, default="")
    date_joined = Time(required=False, allow_null=True)
    secret = HashField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The key of the user's value hashes (F1), so value-level forgets carry over.",
    )
    time_zone = TimeZoneField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The zone the pages show times in; null: the service's.",
    )
    memory_settings = MemorySettingsRow(required=False, allow_null=True, default=None)

    def to_internal_value(self, data):
        if isinstance(data, dict) and not isinstance(data.get("email", ""), str):
            raise serializers.ValidationError({"email": ["Not a valid string."]})
        return super().to_internal_value(data)


# ---------------------------------------------------------------------------------------------
# Rows


class CharacterRow(StrictSerializer):
    slug = CharacterSlugField()
    name = Text(200)
    created_at = Time(required=False, allow_null=True)


class ConversationRow(StrictSerializer):
    id = Uuid()
    character = CharacterSlugField()
    title = Text(200, required=False, allow_blank=True, default="")
    created_at = Time()
    last_seq = BoundedIntegerField(required=False, default=0)


class MessageRow(StrictSerializer):
    id = Uuid()
    conversation = Uuid()
    seq = BoundedIntegerField(min_value=1)
    role = serializers.ChoiceField(choices=["user", "assistant", "system"])
    content = CleanCharField(trim_whitespace=False)
    created_at = Time()
    # F6: whether a forget withholds it from the companion (derived from the tombstones'
    # `withheld_messages`; the import checks that the two agree).
    withheld = StrictBooleanField(
        required=False,
        default=False,
        help_text="Whether a forget withholds this message from the companion (F6); true exactly "
        "when a tombstone of the snapshot lists it in `withheld_messages`.",
    )

    def validate_content(self, value):
        limit = settings.COMPANION["MESSAGE_MAX_CHARS"]
        if not value.strip():
            raise serializers.ValidationError("A message must not be empty.")
        if len(value) > limit:
            raise serializers.ValidationError(f"A message is at most {limit} characters.")
        return value


class ExtractedRow(StrictSerializer):
    outcome = serializers.ChoiceField(choices=["created", "unchanged", "replayed", "blocked"])
    memory = Uuid(allow_null=True)
    reason = Text(40, required=False)


class TurnRow(StrictSerializer):
    id = Uuid()
    conversation = Uuid()
    turn_key = Text(255)
    scene = Text(SCENE_MAX, required=False, allow_null=True, default=None)
    status = serializers.ChoiceField(choices=["open", "replied"])
    user_message = Uuid()
    reply_message = Uuid(allow_null=True, required=False)
    created_at = Time()
    extracted = serializers.ListField(child=ExtractedRow(), default=list)
    plan_snapshot = serializers.DictField(required=False, allow_null=True, default=None)
    plan_hash = Text(64, required=False, allow_blank=True, default="")
    learning = StrictBooleanField(required=False, default=True)

    def validate_plan_snapshot(self, value):
        # Free JSON, but PostgreSQL's jsonb cannot store a NUL character anywhere in it.
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str) and "\x00" in item:
                raise serializers.ValidationError("Must not contain NUL characters.")
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        return value

    def validate(self, attrs):
        if (attrs["status"] == "replied") != (attrs.get("reply_message") is not None):
            raise serializers.ValidationError(
                {"status": ["A turn is replied exactly when it has a reply message."]}
            )
        return attrs


class TellerRow(StrictSerializer):
    """SPEC §15 M3: a connection that told a memory, as the export names it."""

    kind = serializers.ChoiceField(choices=["connection"])
    id = CleanCharField(max_length=36)
    name = CleanCharField(max_length=100)


class MemoryRow(StrictSerializer):
    id = Uuid()
    key = MemoryKeyField()
    value = CleanCharField(max_length=VALUE_MAX, trim_whitespace=False, allow_blank=True)
    scope = MemoryScopeInput()
    status = serializers.ChoiceField(choices=STATUSES)
    status_since = Time(required=False, allow_null=True)
    authority = serializers.ChoiceField(choices=AUTHORITIES)
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0)
    valid_from = Time()
    valid_until = Time(required=False, allow_null=True)
    retracted_at = Time(required=False, allow_null=True)
    recorded_at = Time()
    evidence_time = Time()
    sources = UuidList(max_length=100_000)
    supersedes = Uuid(required=False, allow_null=True)
    version = BoundedIntegerField(bits=32, min_value=1)
    # Files written before §15 have none.
    told_by = TellerRow(many=True, required=False, max_length=1)

    def validate(self, attrs):
        errors = {}
        if attrs["status"] != "active" and attrs.get("status_since") is None:
            errors["status_since"] = ["Required unless the status is active."]
        if attrs["status"] == "forgotten" and attrs["value"] != "":
            errors["value"] = ["A forgotten memory has no value (F2)."]
        if attrs["status"] != "forgotten" and not attrs["value"]:
            errors["value"] = ["This field may not be blank."]
        if attrs.get("valid_until") is not None and attrs["valid_until"] < attrs["valid_from"]:
            errors["valid_until"] = ["Must not be before valid_from."]
        if attrs.get("supersedes") is not None and attrs["supersedes"] == attrs["id"]:
            errors["supersedes"] = ["A memory cannot supersede itself."]
        if errors:
            raise serializers.ValidationError(errors)
        attrs["sources"] = sorted(attrs["sources"], key=str)
        return attrs


class TombstoneRow(StrictSerializer):
    id = Uuid()
    scope = ScopeIdField(allow_everywhere=True)
    key = MemoryKeyField()
    value_hash = HashField(required=False, allow_null=True, default=None)
    forgotten_at = Time()
    blocks_sources_before = Time()
    forgotten_by = serializers.ChoiceField(
        choices=["user", "support"], required=False, default="user"
    )
    # F6: the messages this forget withholds, and the turns whose reply it holds while none is
    # committed (the reply is withheld once it is).
    withheld_messages = UuidList(
        required=False,
        max_length=1_000_000,
        help_text="The ids of the messages this forget withholds from the companion (F6).",
    )
    withheld_replies = UuidList(
        required=False,
        max_length=1_000_000,
        help_text="The ids of turns planned with what this forget erased whose reply has not come "
        "yet: the reply is withheld once it does (F6).",
    )
    # F7.2: the user's other memories this forget withholds (format `companion-memory/3`).
    withheld_memories = UuidList(
        required=False,
        max_length=1_000_000,
        help_text="The ids of the user's other memories this forget withholds from the companion "
        "(F7.2), sorted: memories of the snapshot. Empty in a file of `companion-memory/2` or "
        "earlier, which imports with no memory links.",
    )

    def validate_withheld_memories(self, value):
        return sorted(value, key=str)


class RetractionRow(StrictSerializer):
    scope = ScopeIdField()
    key = MemoryKeyField()
    value_hash = CleanCharField(required=False, allow_blank=True, default="", max_length=64)
    retracted_at = Time()

    def validate_value_hash(self, value):
        if value and not HASH_RE.match(value):
            raise serializers.ValidationError("Empty, or 64 lowercase hex digits.")
        return value


class IdempotencyRow(StrictSerializer):
    key = Text(255)
    payload_hmac = HashField()
    outcome = serializers.ChoiceField(choices=["created", "unchanged", "replayed", "blocked"])
    reason = Text(40, required=False, allow_blank=True, default="")
    record = Uuid(required=False, allow_null=True)
    created_at = Time()


class RuleRow(StrictSerializer):
    id = Uuid()
    capability = Text(100)
    effect = serializers.ChoiceField(choices=EFFECTS)
    source = serializers.ChoiceField(choices=SOURCES)
    scope = PolicyScopeInput()
    requested_by = serializers.ChoiceField(
        choices=REQUESTERS, required=False, allow_null=True, default=None
    )
    valid_from = Time()
    valid_until = Time(required=False, allow_null=True)
    revoked_at = Time(required=False, allow_null=True)
    version = BoundedIntegerField(bits=32, min_value=1)
    supersedes = Uuid(required=False, allow_null=True)
    created_at = Time()

    def validate_source(self, value):
        if value == PRODUCT_DEFAULT:
            raise serializers.ValidationError(
                "A user's rule cannot have the product-default source."
            )
        return value

    def validate(self, attrs):
        errors = {}
        if attrs.get("valid_until") is not None and attrs["valid_until"] <= attrs["valid_from"]:
            errors["valid_until"] = ["Must be after valid_from."]
        if attrs.get("supersedes") is not None and attrs["supersedes"] == attrs["id"]:
            errors["supersedes"] = ["A rule cannot supersede itself."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class PolicyVersionRow(StrictSerializer):
    defaults = BoundedIntegerField(required=False, default=0)
    user = BoundedIntegerField(required=False, default=0)


class DecisionRow(StrictSerializer):
    id = Uuid()
    capability = Text(100)
    requested_by = serializers.ChoiceField(choices=REQUESTERS)
    effect = serializers.ChoiceField(choices=EFFECTS)
    reason = serializers.ChoiceField(choices=DECISION_REASONS)
    rule_ids = UuidList(max_length=10_000)
    defaults_version = BoundedIntegerField()
    user_version = BoundedIntegerField()
    scope_ids = serializers.ListField(child=ScopeIdField(), max_length=4)
    decided_at = Time()
    requester = Text(
        60,
        required=False,
        allow_blank=True,
        default="",
        help_text="Which personal connection asked for it (`connection:<id>`, SPEC §15 M3); "
        "empty for the chat runtime, and in files written before.",
    )


class AnswerRow(StrictSerializer):
    id = Uuid()
    decision = Uuid()
    answer = serializers.ChoiceField(choices=ANSWERS)
    remember = serializers.ChoiceField(choices=REMEMBER)
    rule = Uuid(required=False, allow_null=True)
    media_job = Uuid(required=False, allow_null=True)
    answered_at = Time()


class MediaJobRow(StrictSerializer):
    id = Uuid()
    capability = Text(100)
    character = CharacterSlugField(required=False, allow_null=True, default=None)
    conversation = Uuid(required=False, allow_null=True)
    decision_id = Uuid()
    start_decision_id = Uuid(required=False, allow_null=True)
    created_at = Time()
    started_at = Time(required=False, allow_null=True)
    finished_at = Time(required=False, allow_null=True)
    idempotency_key = Text(255)
    requested_by = serializers.ChoiceField(choices=REQUESTERS)
    scene = Text(SCENE_MAX, required=False, allow_null=True, default=None)
    status = serializers.ChoiceField(choices=JOB_STATUSES)
    reason = Text(40, required=False, allow_blank=True, default="")
    decision_effect = serializers.ChoiceField(choices=EFFECTS)
    decision_reason = serializers.ChoiceField(choices=DECISION_REASONS)
    decision_rule_ids = UuidList(max_length=10_000)
    admission_defaults_version = BoundedIntegerField()
    admission_user_version = BoundedIntegerField()
    allowed_once = serializers.BooleanField(required=False, default=False)
    start_defaults_version = BoundedIntegerField(required=False, allow_null=True, default=None)
    start_user_version = BoundedIntegerField(required=False, allow_null=True, default=None)

    def validate(self, attrs):
        errors = {}
        if attrs.get("scene") is not None and attrs.get("conversation") is None:
            errors["scene"] = ["A scene needs a conversation."]
        if (attrs.get("start_defaults_version") is None) != (
            attrs.get("start_user_version") is None
        ):
            errors["start_user_version"] = ["Both start versions, or neither."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class KeyRow(StrictSerializer):
    key = MemoryKeyField()
    cardinality = serializers.ChoiceField(choices=CARDINALITIES)
    label = Text(200)


def _rows(row_serializer, **kwargs):
    return serializers.ListField(child=row_serializer(), required=False, default=list, **kwargs)


class SnapshotInput(StrictSerializer):
    """A whole snapshot (SPEC §9). `validate` checks what spans rows: unique ids and unique
    constraints, and that every reference resolves inside the snapshot or to the catalog."""

    format = serializers.ChoiceField(choices=list(FORMATS))
    exported_at = Time(required=False, allow_null=True)
    user = SnapshotUserInput()
    characters = _rows(CharacterRow)
    conversations = _rows(ConversationRow)
    messages = _rows(MessageRow)
    turns = _rows(TurnRow)
    memories = _rows(MemoryRow)
    tombstones = _rows(TombstoneRow)
    retractions = _rows(RetractionRow)
    idempotency = _rows(IdempotencyRow)
    policy_rules = _rows(RuleRow)
    policy_version = PolicyVersionRow(required=False, default=dict)
    decisions = _rows(DecisionRow)
    answers = _rows(AnswerRow)
    media_jobs = _rows(MediaJobRow)
    keys = _rows(KeyRow)
    # S2: support's reveals, exported read-only. Accepted so an export imports as it is, then
    # dropped: an import restores none.
    reveals = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        default=list,
        help_text="Read-only (exported); ignored by an import.",
    )

    def validate(self, attrs):
        attrs.pop("reveals", None)
        errors = check_references(attrs)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class RevealRow(serializers.Serializer):
    """S2: one reveal of the user's private text by support (`support.selectors`)."""

    opened_at = Time()
    expires_at = Time()
    ended_at = Time(allow_null=True, help_text="null while the reveal is open.")
    status = serializers.ChoiceField(choices=["open", "closed", "expired"])
    reason = serializers.CharField(help_text="The reason the staff member wrote.")
    by = serializers.CharField(help_text='Always "a support team member": never a name.')


class Snapshot(SnapshotInput):
    """The snapshot as `GET /users/{user}/export` answers it (the same shape, with `reveals`)."""

    reveals = serializers.ListField(child=RevealRow(), read_only=True)
