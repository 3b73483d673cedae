"""Input and output shapes of the memory API (SPEC §10). Inputs are strict: unknown fields
are refused, so a misspelt field never silently changes meaning."""

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api import PageOutput
from config.serializers import (
    CleanCharField,
    ContextInput,
    PageQuery,
    ScopeInput,
    ScopeOutput,
    StrictSerializer,
)
from conversations.scopes import scope_dict_of_id

from .domain import (
    AUTHORITIES,
    KEY_MAX,
    KEY_RE,
    STATE_ACTIVE,
    STATES,
    STATUSES,
    VALUE_MAX,
    RecordState,
    loggable_key,
)
from .withholding import withheld_counts, withheld_memory_counts

STATE_RULES = ("R2", "R3", "R4", "R5", "R6")


class StateDetailOutput(serializers.Serializer):
    """SPEC E1: the R8 detail of a memory's state."""

    rule = serializers.ChoiceField(
        choices=STATE_RULES,
        allow_null=True,
        help_text="The step that decided it (R2–R6); null when active.",
    )
    by = serializers.UUIDField(
        allow_null=True, help_text="The memory that superseded (R5) or outranked (R6) it."
    )
    since = serializers.DateTimeField(allow_null=True, help_text="Since when the state holds.")


# SPEC §1 and C1: what the server checks of a key and of a scope id stands in the schema too.
KEY_VALIDATOR = RegexValidator(
    KEY_RE.pattern,
    "Keys are 1–120 characters of a-z, 0-9, '_', '-' "
    "and '.', with no leading, trailing or double dot.",
)
SCOPE_ID_VALIDATOR = RegexValidator(
    r"^(user|character|conversation|scene)(:[^\x00]*)?$", "Not a scope id."
)


class MemoryOutput(serializers.Serializer):
    """A memory record as the API shows it; built from the pure-core record."""

    id = serializers.UUIDField()
    user = serializers.CharField()
    key = serializers.CharField(
        help_text="The memory key (such as `pet.name`); for a memory a forget withholds "
        "(F7.2), with its free part masked (`people.*.works_at`)."
    )
    value = serializers.CharField(
        allow_blank=True,
        allow_null=True,
        help_text="The remembered value: empty once forgotten (F2), null for a memory a "
        "forget withholds (F7.2).",
    )
    scope = ScopeOutput()
    state = serializers.ChoiceField(
        choices=STATES, help_text="SPEC E1: the record's resolution now in its own scope (R2–R6)."
    )
    state_detail = StateDetailOutput()
    status = serializers.ChoiceField(
        choices=STATUSES, help_text="The stored status, which normalisation may leave behind (W12)."
    )
    status_since = serializers.DateTimeField(allow_null=True)
    authority = serializers.ChoiceField(choices=AUTHORITIES)
    confidence = serializers.FloatField()
    valid_from = serializers.DateTimeField()
    valid_until = serializers.DateTimeField(allow_null=True)
    retracted_at = serializers.DateTimeField(allow_null=True)
    recorded_at = serializers.DateTimeField()
    evidence_time = serializers.DateTimeField()
    sources = serializers.ListField(child=serializers.UUIDField())
    supersedes = serializers.UUIDField(allow_null=True)
    version = serializers.IntegerField()


def _dt(value):
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


ACTIVE = RecordState(STATE_ACTIVE)


def memory_json(record, state: RecordState) -> dict:
    """Fast rendering of a pure-core record and its E1 state in the `MemoryOutput` shape (the
    resolver's hot path renders many of them; a schema test keeps the two in step)."""
    return {
        "id": record.id,
        "user": record.user,
        "key": record.key,
        "value": record.value,
        "scope": record.scope.as_dict(),
        "state": state.state,
        "state_detail": {"rule": state.rule, "by": state.by, "since": _dt(state.since)},
        "status": record.status,
        "status_since": _dt(record.status_since),
        "authority": record.authority,
        "confidence": record.confidence,
        "valid_from": _dt(record.valid_from),
        "valid_until": _dt(record.valid_until),
        "retracted_at": _dt(record.retracted_at),
        "recorded_at": _dt(record.recorded_at),
        "evidence_time": _dt(record.evidence_time),
        "sources": list(record.sources),
        "supersedes": record.supersedes,
        "version": record.version,
    }


def withheld_memory_json(record, state: RecordState) -> dict:
    """F7.2: a memory a forget withholds, as runtime reads show it: `memory_json` with no
    value and the free part of its key masked as the logs mask it (`loggable_key`)."""
    found = memory_json(record, state)
    found["key"], found["value"] = loggable_key(record.key), None
    return found


def listed_memory_json(found) -> dict:
    """A listed memory (`GET /memories`, the MCP tool `list_memories`): masked when a forget
    withholds it (F7.2)."""
    if found.record.withheld_by:
        return withheld_memory_json(found.record, found.state)
    return memory_json(found.record, found.state)


class HistoryRowOutput(MemoryOutput):
    effective_until = serializers.DateTimeField(allow_null=True)


class MemoryAssertInput(StrictSerializer):
    user = CleanCharField(max_length=150)
    key = CleanCharField(max_length=KEY_MAX, validators=[KEY_VALIDATOR])
    value = CleanCharField(max_length=VALUE_MAX, trim_whitespace=False)
    scope = ScopeInput()
    authority = serializers.ChoiceField(choices=AUTHORITIES, default="model-inferred")
    confidence = serializers.FloatField(default=1.0, min_value=0.0, max_value=1.0)
    valid_from = serializers.DateTimeField(required=False, allow_null=True)
    valid_until = serializers.DateTimeField(required=False, allow_null=True)
    sources = serializers.ListField(
        child=serializers.UUIDField(), required=False, default=list, max_length=100
    )
    supersedes = serializers.UUIDField(required=False, allow_null=True)
    idempotency_key = CleanCharField(max_length=255, required=False, allow_null=True)


class AssertOutput(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=["created", "unchanged", "replayed", "blocked"])
    memory = MemoryOutput(allow_null=True)
    reason = serializers.CharField(required=False)


class MemoryListQuery(PageQuery):
    user = CleanCharField(
        max_length=150, help_text="The ref of the user whose memories to list (required)."
    )
    key = CleanCharField(
        max_length=200, required=False, help_text="Only memories of this key (such as `pet.name`)."
    )
    scope = CleanCharField(
        max_length=255,
        required=False,
        help_text="Only memories of this scope, by its id (`user:sam`, "
        "`character:sam:captain-rowan`, `conversation:<id>`, "
        "`scene:<id>:<scene>`).",
    )
    status = serializers.ChoiceField(
        choices=STATUSES, required=False, help_text="Only memories with this stored status."
    )
    state = serializers.ChoiceField(
        choices=STATES, required=False, help_text="Only memories in this state now (E1)."
    )
    include_withheld = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also list the memories a forget withholds (F7.2: they hold a forgotten "
        "value), each with `value` null and the free part of its key masked "
        "(`people.*.works_at`). Left out by default.",
    )


class MemoryCorrectInput(StrictSerializer):
    value = CleanCharField(max_length=VALUE_MAX, trim_whitespace=False)


class EmptyInput(StrictSerializer):
    pass


class MemoryForgetInput(StrictSerializer):
    everywhere = serializers.BooleanField(default=False)
    whole_key = serializers.BooleanField(default=False)


TOMBSTONE_SCOPE_KINDS = ("user", "character", "conversation", "scene", "everywhere")


class TombstoneScopeOutput(serializers.Serializer):
    """Where a forget applies, in a memory scope's shape (C5), or `{"kind": "everywhere"}`
    for a forget of every scope."""

    kind = serializers.ChoiceField(
        choices=TOMBSTONE_SCOPE_KINDS,
        help_text="`user`, `character`, `conversation` or `scene` as for a memory's scope, or "
        "`everywhere`: the forget covers every scope of the user.",
    )
    character = serializers.CharField(
        required=False, help_text="The character's slug (kind `character`)."
    )
    conversation = serializers.CharField(
        required=False, help_text="The conversation's id (kinds `conversation` and `scene`)."
    )
    scene = serializers.CharField(required=False, help_text="The scene (kind `scene`).")


class TombstoneOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="The forget's id (`DELETE /tombstones/{id}` undoes it).")
    user = serializers.CharField(
        source="user.username", help_text="The ref of the user who forgot."
    )
    scope = serializers.SerializerMethodField(
        help_text='Where the forget applies, in a memory scope\'s shape; `{"kind": '
        '"everywhere"}` when it covers every scope (C5).'
    )
    scope_id = serializers.CharField(
        help_text="The same scope as its stable id string (`user:sam`, "
        "`character:sam:captain-rowan`…, or `*` for every scope): what `GET /memories?scope=` "
        "takes."
    )
    key = serializers.CharField(help_text="The memory key forgotten (such as `pet.name`).")
    has_value_hash = serializers.SerializerMethodField(
        help_text="True when only one value of a many-valued key was forgotten (a keyed hash "
        "of it is kept, never the value); false when the whole key was."
    )
    forgotten_at = serializers.DateTimeField(help_text="When the forget was made.")
    blocks_sources_before = serializers.DateTimeField(
        help_text="Facts learned from messages older than this are never learned again (F3)."
    )
    withheld_messages = serializers.SerializerMethodField(
        help_text="How many messages this forget withholds from every later prompt plan (F6): "
        "the messages its memories were learnt from and those that mention a forgotten value "
        "as whole words, counting messages another forget also withholds."
    )

    withheld_memories = serializers.SerializerMethodField(
        help_text="How many of the user's other memories this forget withholds (F7.2): those "
        "whose value, label or key holds a forgotten value as whole words, learnt at or before "
        "the forget. They stay the user's, but no prompt in the forget's scope uses them."
    )

    def get_withheld_messages(self, obj) -> int:
        found = getattr(obj, "withheld_messages", None)
        return found if found is not None else withheld_counts([obj.pk])[str(obj.pk)]

    def get_withheld_memories(self, obj) -> int:
        found = getattr(obj, "withheld_memories", None)
        return found if found is not None else withheld_memory_counts([obj.pk])[str(obj.pk)]

    @extend_schema_field(TombstoneScopeOutput)
    def get_scope(self, obj) -> dict:
        return scope_dict_of_id(obj.scope_id)

    def get_has_value_hash(self, obj) -> bool:
        return obj.value_hash is not None


class RetractOutput(serializers.Serializer):
    retracted_at = serializers.DateTimeField()
    records = MemoryOutput(many=True)


class ResolveInput(StrictSerializer):
    context = ContextInput()
    keys = serializers.ListField(
        child=CleanCharField(max_length=200), required=False, allow_empty=True, max_length=200
    )
    explain = serializers.UUIDField(required=False, allow_null=True)


class ExclusionOutput(serializers.Serializer):
    id = serializers.UUIDField()
    reason = serializers.CharField()


class ProjectedOutput(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    value = serializers.CharField()
    certainty = serializers.ChoiceField(choices=["confirmed", "likely", "uncertain"])
    scope = ScopeOutput()


class ExplainOutput(serializers.Serializer):
    id = serializers.UUIDField()
    step = serializers.CharField()
    reason = serializers.CharField()
    detail = serializers.CharField()


class ResolveOutput(serializers.Serializer):
    active = MemoryOutput(many=True)
    excluded = ExclusionOutput(many=True)
    prompt = ProjectedOutput(many=True)
    prompt_excluded = ExclusionOutput(many=True)
    trace = serializers.DictField()
    resolver_version = serializers.CharField()
    explain = ExplainOutput(required=False)


class HistoryQuery(PageQuery):
    user = CleanCharField(max_length=150, help_text="The ref of the user (required).")
    key = CleanCharField(
        max_length=200,
        help_text="The key whose history to read, such as `user.lives_in` (required).",
    )
    scope = CleanCharField(
        max_length=255,
        required=False,
        validators=[SCOPE_ID_VALIDATOR],
        help_text="The scope, by its id (`user:sam`, `character:sam:captain-rowan`…); "
        "the user's own scope when absent.",
    )


class RememberInput(StrictSerializer):
    context = ContextInput()
    text = CleanCharField(max_length=100_000, trim_whitespace=False)
    source = serializers.UUIDField(required=False, allow_null=True)


class ExtractedOutput(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=["created", "unchanged", "replayed", "blocked"])
    memory = MemoryOutput(allow_null=True)
    reason = serializers.CharField(required=False)


class RememberOutput(serializers.Serializer):
    extracted = ExtractedOutput(many=True)


ASK_QUESTIONS = (
    "A question in words, in English, about the user — not a key or a search term. Understood "
    'questions: where the user lives or works ("Where do I live?", "Who do I work for?"), '
    'what to call them or not ("What\'s my name?", "What should you not call me?"), what '
    'they like or dislike ("What do I like?"), the name of a thing of theirs ("What is my '
    'dog called?", "What did I name my plant?"), and where a person they know works or '
    'lives and what they do ("Where does Priya work?", "What does Tom do?"). Pronouns '
    '("Where does she work?") are not resolved. Anything else answers `understood: false`.'
)


class AskQuery(StrictSerializer):
    user = CleanCharField(max_length=150, help_text="The ref of the user the question is about.")
    q = CleanCharField(max_length=500, help_text=ASK_QUESTIONS)


class AskOutput(serializers.Serializer):
    answer = serializers.CharField(
        allow_null=True,
        help_text="The remembered value (a many-valued key's values joined by "
        '", "); null when the question was not understood or nothing active answers it.',
    )
    understood = serializers.BooleanField(
        help_text="Whether the question was understood. False: `q` is not a question this "
        "operation understands (see `q`), and `answer` is null. True with a null `answer`: "
        "understood, but nothing is remembered now that answers it."
    )
    memory = MemoryOutput(
        required=False,
        allow_null=True,
        help_text="The memory that answers (the newest, for a many-valued key); null without an "
        "answer.",
    )


class TombstoneListQuery(PageQuery):
    user = CleanCharField(
        max_length=150, help_text="The ref of the user whose forgets to list (required)."
    )


def assert_json(result) -> dict:
    """An assert-shaped answer: the outcome and the memory with its state (E1)."""
    record = result.record
    body = {
        "outcome": result.outcome,
        "memory": memory_json(record, result.state) if record is not None else None,
    }
    if result.reason:
        body["reason"] = result.reason
    return body


# ---------------------------------------------------------------------------------------------
# The memory switches (I8)


class StrictBooleanField(serializers.BooleanField):
    """A JSON boolean and nothing else: DRF would read "yes", 1 or "off" as booleans, and a
    switch that stops or resumes learning must not flip on a guess."""

    def to_internal_value(self, data):
        if data is True or data is False:
            return data
        self.fail("invalid", input=data)


class MemorySettingsInput(StrictSerializer):
    learn = StrictBooleanField(
        required=False, help_text="May the companion learn new memories from messages?"
    )
    use = StrictBooleanField(required=False, help_text="May memories enter prompts?")


class MemorySettingsOutput(serializers.Serializer):
    learn = serializers.BooleanField()
    use = serializers.BooleanField()
    changed_at = serializers.DateTimeField(
        allow_null=True, help_text="When a switch last changed; null if never."
    )
    changed_by = serializers.ChoiceField(
        choices=["user", "api", "support"],
        allow_null=True,
        help_text="Where the last change came from: the pages, the API or support.",
    )


class MemoryPageOutput(PageOutput):
    results = MemoryOutput(many=True)


class HistoryPageOutput(PageOutput):
    results = HistoryRowOutput(many=True)


class TombstonePageOutput(PageOutput):
    results = TombstoneOutput(many=True)
