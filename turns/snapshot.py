"""The snapshot's shape (SPEC §9), validated with the API's own fields and rules.

`SnapshotInput` checks a whole snapshot in one pass before anything is written: every field
with the field the API's writes use for it (user refs, character slugs, keys, scopes, choices,
times that are real UTC instants in years 1–9999, integers that fit their columns, no NUL and
no lone surrogate in any string, no `null` inside a list), every row against the rules the
database would enforce (scope shapes, windows, one reply per turn …), and every reference
against the snapshot itself or the catalog (characters, capabilities). Errors name the path of
the field (`memories.3.valid_from`).

The validated rows' representation (`serializer.data`) is the snapshot's canonical form: the
same dicts `turns.portability` exports, which is how an imported row is compared with
a stored one.
"""

from __future__ import annotations

import re

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.serializers import (
    SCENE_MAX,
    BoundedIntegerField,
    CharacterSlugField,
    CleanCharField,
    ScopeInput,
    StrictSerializer,
    UserRefField,
)
from conversations.domain import Scope
from conversations.models import Character
from memory.domain import (
    AUTHORITIES,
    CARDINALITIES,
    KEY_MAX,
    KEY_RE,
    STATUSES,
    VALUE_MAX,
    known_time_zones,
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
from policy.models import Capability
from policy.serializers import RuleScopeInput

FORMAT = "companion-memory/1"
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


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": KEY_MAX,
                     "pattern": KEY_RE.pattern})
class MemoryKeyField(CleanCharField):
    """A memory key (SPEC §1): what `POST /memories` accepts."""

    def __init__(self, **kwargs):
        super().__init__(max_length=KEY_MAX, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not valid_key(value):
            raise serializers.ValidationError("Not a valid key: 1–120 of a-z 0-9 _ . - with no empty segment.")
        return value


@extend_schema_field({"type": "string", "pattern": HASH_RE.pattern})
class HashField(CleanCharField):
    """A keyed hash: 64 lowercase hex digits."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not HASH_RE.match(value):
            raise serializers.ValidationError("Must be 64 lowercase hex digits.")
        return value


def _scope_id_error(scope_id: str, ref: str | None, *, allow_everywhere: bool) -> str | None:
    """Why `scope_id` is not a scope id (SPEC §1) of the user `ref`, or None."""
    if allow_everywhere and scope_id == "*":
        return None
    kind, _, rest = scope_id.partition(":")
    if kind == "user":
        return None if ref is None or rest == ref else "Not this user's scope."
    if kind == "character":
        owner, _, slug = rest.rpartition(":")
        if ref is not None and owner != ref:
            return "Not this user's scope."
        return None if re.fullmatch(r"[-a-zA-Z0-9_]{1,100}", slug) else "Not a character slug."
    if kind in ("conversation", "scene"):
        conversation, _, scene = rest.partition(":")
        if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", conversation):
            return "Not a conversation id."
        if kind == "conversation":
            return None if not scene else "Not a scope id."
        return None if 0 < len(scene) <= SCENE_MAX else f"A scene id of 1–{SCENE_MAX} characters."
    return "Not a scope id (user:, character:, conversation: or scene:)."


class ScopeIdField(CleanCharField):
    """A scope id (SPEC §1) — of the snapshot's user, checked by the snapshot."""

    def __init__(self, *, allow_everywhere: bool = False, **kwargs):
        self.allow_everywhere = allow_everywhere
        super().__init__(max_length=255, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        error = _scope_id_error(value, None, allow_everywhere=self.allow_everywhere)
        if error:
            raise serializers.ValidationError(error)
        return value


class _NullsAbsent:
    """The API's scope shapes leave out the references a kind does not have; older snapshots
    wrote them as null. Both are accepted."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not (k != "kind" and v is None)}
        return super().to_internal_value(data)


class MemoryScopeInput(_NullsAbsent, ScopeInput):
    pass


class PolicyScopeInput(_NullsAbsent, RuleScopeInput):
    pass


# ---------------------------------------------------------------------------------------------
# The user object: ONE place for its fields. A new per-user setting joins the snapshot with a
# field here, a line in `portability.user_object` (export) and one in
# `portability.user_object_apply` (import).


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
    changed_by = serializers.ChoiceField(choices=["user", "api", "support"], required=False,
                                         allow_null=True, default=None)


class SnapshotUserInput(StrictSerializer):
    ref = UserRefField()
    email = serializers.EmailField(required=False, allow_blank=True, default="", max_length=254)
    first_name = Text(150, required=False, allow_blank=True, default="")
    last_name = Text(150, required=False, allow_blank=True, default="")
    date_joined = Time(required=False, allow_null=True)
    secret = HashField(required=False, allow_null=True, default=None,
                       help_text="The key of the user's value hashes (F1), so value-level forgets carry over.")
    time_zone = TimeZoneField(required=False, allow_null=True, default=None,
                              help_text="The zone the pages show times in; null: the service's.")
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
            raise serializers.ValidationError({"status": ["A turn is replied exactly when it has a reply message."]})
        return attrs


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
    forgotten_by = serializers.ChoiceField(choices=["user", "support"], required=False, default="user")


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
    requested_by = serializers.ChoiceField(choices=REQUESTERS, required=False, allow_null=True, default=None)
    valid_from = Time()
    valid_until = Time(required=False, allow_null=True)
    revoked_at = Time(required=False, allow_null=True)
    version = BoundedIntegerField(bits=32, min_value=1)
    supersedes = Uuid(required=False, allow_null=True)
    created_at = Time()

    def validate_source(self, value):
        if value == PRODUCT_DEFAULT:
            raise serializers.ValidationError("A user's rule cannot have the product-default source.")
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
        if (attrs.get("start_defaults_version") is None) != (attrs.get("start_user_version") is None):
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

    format = serializers.ChoiceField(choices=[FORMAT])
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
    reveals = serializers.ListField(child=serializers.DictField(), required=False, default=list,
                                    help_text="Read-only (exported); ignored by an import.")

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


# ---------------------------------------------------------------------------------------------
# What spans rows


def memory_scope_id(ref: str, scope: dict) -> str:
    """The scope id (SPEC §1) of a memory's scope object in the snapshot."""
    return Scope(kind=scope["kind"], character=scope.get("character"), conversation=scope.get("conversation"),
                 scene=scope.get("scene")).scope_id(ref)


def _first_in_cycle(edges: dict) -> set:
    """The nodes of `edges` (node → the node it supersedes) that lie on a cycle. Linear: each
    node is walked once."""
    state: dict = {}
    on_cycle: set = set()
    for start in edges:
        path = []
        node = start
        while node is not None and node in edges and node not in state:
            state[node] = "walking"
            path.append(node)
            node = edges[node]
        if node is not None and state.get(node) == "walking":
            on_cycle.update(path[path.index(node):])
        for visited in path:
            state[visited] = "done"
    return on_cycle


def check_references(s: dict) -> dict[str, list[str]]:
    """Unique ids and unique constraints within the snapshot, and references that resolve
    inside it (or, for characters and capabilities, to the catalog). Paths name the field."""
    errors: dict[str, list[str]] = {}
    ref = s["user"]["ref"]

    def err(path: str, message: str) -> None:
        errors.setdefault(path, []).append(message)

    def unique(section: str, field: str, key) -> dict:
        seen: dict = {}
        for i, row in enumerate(s[section]):
            k = key(row)
            if k is None:
                continue
            if k in seen:
                err(f"{section}.{i}.{field}", f"Duplicate: {section}.{seen[k]} has the same.")
            else:
                seen[k] = i
        return seen

    # The catalog: characters (the snapshot's, or stored) and capabilities (stored).
    unique("characters", "slug", lambda c: c["slug"])
    named = {c["character"] for c in s["conversations"]}
    named |= {m["scope"].get("character") for m in s["memories"]} | {r["scope"].get("character") for r in s["policy_rules"]}
    named |= {j["character"] for j in s["media_jobs"]}
    named.discard(None)
    slugs = {c["slug"] for c in s["characters"]}
    slugs |= set(Character.objects.filter(slug__in=named - slugs).values_list("slug", flat=True))
    capabilities = set(Capability.objects.values_list("name", flat=True))

    def character(path: str, slug) -> None:
        if slug is not None and slug not in slugs:
            err(path, "Unknown character: neither in the snapshot nor stored here.")

    def capability(path: str, name: str) -> None:
        if name not in capabilities:
            err(path, "Unknown capability.")

    unique("keys", "key", lambda k: k["key"])

    # Conversations, messages, turns.
    unique("conversations", "id", lambda c: c["id"])
    conversations = {str(c["id"]): c for c in s["conversations"]}
    for i, c in enumerate(s["conversations"]):
        character(f"conversations.{i}.character", c["character"])

    def conversation(path: str, value) -> None:
        if value is not None and str(value) not in conversations:
            err(path, "Not a conversation of this snapshot.")

    unique("messages", "id", lambda m: m["id"])
    unique("messages", "seq", lambda m: (m["conversation"], m["seq"]))
    messages = {str(m["id"]): m for m in s["messages"]}
    for i, m in enumerate(s["messages"]):
        conversation(f"messages.{i}.conversation", m["conversation"])

    unique("turns", "id", lambda t: t["id"])
    unique("turns", "turn_key", lambda t: (t["conversation"], t["turn_key"]))
    unique("turns", "user_message", lambda t: t["user_message"])
    unique("turns", "reply_message", lambda t: t.get("reply_message"))
    for i, t in enumerate(s["turns"]):
        conversation(f"turns.{i}.conversation", t["conversation"])
        for field, role in (("user_message", "user"), ("reply_message", "assistant")):
            message = t.get(field)
            if message is None:
                continue
            found = messages.get(str(message))
            if found is None or found["conversation"] != t["conversation"] or found["role"] != role:
                err(f"turns.{i}.{field}", f"Not a {role} message of this turn's conversation in the snapshot.")

    # Memories.
    unique("memories", "id", lambda m: m["id"])
    unique("memories", "version", lambda m: (memory_scope_id(ref, m["scope"]), m["key"], m["version"]))
    memories = {m["id"]: m for m in s["memories"]}
    for i, m in enumerate(s["memories"]):
        scope = m["scope"]
        character(f"memories.{i}.scope.character", scope.get("character"))
        conversation(f"memories.{i}.scope.conversation", scope.get("conversation"))
        if len(set(m["sources"])) != len(m["sources"]):
            err(f"memories.{i}.sources", "Each message at most once.")
        for j, source in enumerate(m["sources"]):
            if str(source) not in messages:
                err(f"memories.{i}.sources.{j}", "Not a message of this snapshot.")
        target = m.get("supersedes")
        if target is not None:
            found = memories.get(target)
            if found is None:
                err(f"memories.{i}.supersedes", "Not a memory of this snapshot.")
            elif (found["key"], memory_scope_id(ref, found["scope"])) != (m["key"], memory_scope_id(ref, scope)):
                err(f"memories.{i}.supersedes", "A memory supersedes one of its own slot (same key and scope).")
    looped = _first_in_cycle({m["id"]: m.get("supersedes") for m in s["memories"]})
    for i, m in enumerate(s["memories"]):
        if m["id"] in looped:
            err(f"memories.{i}.supersedes", "Supersedes edges form a cycle.")

    # Tombstones, retractions, idempotency records.
    unique("tombstones", "id", lambda t: t["id"])
    for section in ("tombstones", "retractions"):
        for i, row in enumerate(s[section]):
            problem = _scope_id_error(row["scope"], ref, allow_everywhere=section == "tombstones")
            if problem:
                err(f"{section}.{i}.scope", problem)
    unique("idempotency", "key", lambda r: r["key"])
    for i, r in enumerate(s["idempotency"]):
        if r.get("record") is not None and r["record"] not in memories:
            err(f"idempotency.{i}.record", "Not a memory of this snapshot.")

    # Policy.
    unique("policy_rules", "id", lambda r: r["id"])
    unique("policy_rules", "supersedes", lambda r: r.get("supersedes"))
    rules = {r["id"] for r in s["policy_rules"]}
    for i, r in enumerate(s["policy_rules"]):
        capability(f"policy_rules.{i}.capability", r["capability"])
        character(f"policy_rules.{i}.scope.character", r["scope"].get("character"))
        conversation(f"policy_rules.{i}.scope.conversation", r["scope"].get("conversation"))
        if r.get("supersedes") is not None and r["supersedes"] not in rules:
            err(f"policy_rules.{i}.supersedes", "Not a rule of this snapshot.")
    looped = _first_in_cycle({r["id"]: r.get("supersedes") for r in s["policy_rules"]})
    for i, r in enumerate(s["policy_rules"]):
        if r["id"] in looped:
            err(f"policy_rules.{i}.supersedes", "Supersedes edges form a cycle.")

    unique("decisions", "id", lambda d: d["id"])
    decisions = {d["id"] for d in s["decisions"]}
    for i, d in enumerate(s["decisions"]):
        capability(f"decisions.{i}.capability", d["capability"])
        kinds = [scope_id.partition(":")[0] for scope_id in d["scope_ids"]]
        if len(set(kinds)) != len(kinds):
            err(f"decisions.{i}.scope_ids", "At most one scope id of each kind.")
        for j, scope_id in enumerate(d["scope_ids"]):
            problem = _scope_id_error(scope_id, ref, allow_everywhere=False)
            if problem:
                err(f"decisions.{i}.scope_ids.{j}", problem)

    unique("media_jobs", "id", lambda j: j["id"])
    unique("media_jobs", "idempotency_key", lambda j: j["idempotency_key"])
    jobs = {j["id"] for j in s["media_jobs"]}
    for i, j in enumerate(s["media_jobs"]):
        capability(f"media_jobs.{i}.capability", j["capability"])
        character(f"media_jobs.{i}.character", j["character"])
        conversation(f"media_jobs.{i}.conversation", j.get("conversation"))
        found = conversations.get(str(j.get("conversation")))
        if found is not None and j["character"] is not None and found["character"] != j["character"]:
            err(f"media_jobs.{i}.character", "Not the character of the job's conversation.")

    unique("answers", "id", lambda a: a["id"])
    unique("answers", "decision", lambda a: a["decision"])
    for i, a in enumerate(s["answers"]):
        if a["decision"] not in decisions:
            err(f"answers.{i}.decision", "Not a decision of this snapshot.")
        if a.get("rule") is not None and a["rule"] not in rules:
            err(f"answers.{i}.rule", "Not a rule of this snapshot.")
        if a.get("media_job") is not None and a["media_job"] not in jobs:
            err(f"answers.{i}.media_job", "Not a media job of this snapshot.")
    return errors
