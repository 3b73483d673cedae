"""Input pieces shared by every API: context and scope shapes (SPEC §10)."""

from rest_framework import serializers

SCENE_MAX = 100


class QueryText(dict):
    """A request's query parameters (`config.api.query_params`): every value arrived as text,
    so its fields read it in the spellings their schema documents (`limit=20`) rather than
    as a JSON type."""


# C7: the JSON type each kind of input field takes, and nothing else. DRF's fields are lenient
# (a BooleanField reads "yes", "on", 1 and "1"; an IntegerField "1" and 1.0; a FloatField
# "0.5" and true; a CharField, a SlugField or a UUIDField a number), so a body is checked
# here, once, before any field reads it. The first class of this list a field is an instance
# of names its type; a field of none of them is an error the contract tests catch.
JSON_TYPES: tuple[tuple[type, str], ...] = (
    (serializers.BooleanField, "boolean"),
    (serializers.IntegerField, "integer"),
    (serializers.FloatField, "number"),
    (serializers.DecimalField, "number"),
    (serializers.ListField, "array"),
    (serializers.ListSerializer, "array"),
    (serializers.DictField, "object"),
    (serializers.Serializer, "object"),
    (serializers.JSONField, "any"),
    (serializers.CharField, "string"),
    (serializers.ChoiceField, "string"),
    (serializers.UUIDField, "string"),
    (serializers.DateTimeField, "string"),
    (serializers.DateField, "string"),
    (serializers.TimeField, "string"),
    (serializers.DurationField, "string"),
)

_JSON_TYPE_CHECKS = {
    "boolean": lambda v: v is True or v is False,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}

_JSON_TYPE_ERRORS = {
    "boolean": "Must be a JSON boolean: true or false.",
    "integer": 'Must be a JSON integer (such as 1; not 1.0 or "1").',
    "number": 'Must be a JSON number (such as 0.5; not "0.5").',
    "string": "Must be a JSON string.",
    "array": "Must be a JSON array.",
    "object": "Must be a JSON object.",
}


def json_type(field: serializers.Field) -> str | None:
    """The JSON type `field` takes in a request body (C7), or None for a kind of field this
    module does not know."""
    return next((name for cls, name in JSON_TYPES if isinstance(field, cls)), None)


def json_type_error(field: serializers.Field, value):
    """Why `value` is not of the JSON type `field` takes, or None. `null` is left to the
    field, which refuses it unless it allows null. An array's items are checked against its
    child: the errors are then `{index: [message]}`, as DRF names a list's items."""
    if value is None:
        return None
    kind = json_type(field)
    if kind is None or not _JSON_TYPE_CHECKS[kind](value):
        return [_JSON_TYPE_ERRORS.get(kind, "Not a type this field takes.")]
    child = getattr(field, "child", None)
    if isinstance(field, serializers.ListField) and child is not None:
        errors = {}
        for index, item in enumerate(value):
            error = json_type_error(child, item)
            if error:
                errors[index] = error
        return errors or None
    return None


class StrictSerializer(serializers.Serializer):
    """Refuses unknown fields: a typo in a field name must not be silently ignored. The same
    400 names every required field that is missing (C5): a body that forgot its `context`
    wrapper and put the context's fields at the top hears that `context` is required and
    that those fields belong inside it.

    Each field takes only its JSON type (C7): a boolean `true` or `false`, an integer `1`
    (never `1.0` or `"1"`), a number a JSON number, a string a JSON string; `null` only where
    the field says it is nullable."""

    # Every request body and every object in it is a StrictSerializer (the contract tests
    # check it), so this check reaches every field of every body; a query's text
    # (`QueryText`) is read in its documented spellings instead.
    def to_internal_value(self, data):
        if isinstance(data, dict) and not isinstance(data, QueryText):
            wrong = self._wrong_json_types(data)
            if wrong:
                rest = {name: value for name, value in data.items() if name not in wrong}
                try:
                    self._known_fields_value(rest)
                except serializers.ValidationError as exc:
                    others = exc.detail if isinstance(exc.detail, dict) else {}
                    raise serializers.ValidationError({**others, **wrong}) from None
                raise serializers.ValidationError(wrong)
        return self._known_fields_value(data)

    def _wrong_json_types(self, data: dict) -> dict:
        wrong = {}
        for name, field in self.fields.items():
            if field.read_only or name not in data:
                continue
            error = json_type_error(field, data[name])
            if error:
                wrong[name] = error
        return wrong

    def _known_fields_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                unknown_errors = {name: ["Unknown field."] for name in unknown}
                missing = {}
                for name, field in self.fields.items():
                    if not field.required or field.read_only or name in data:
                        continue
                    inner = [
                        u
                        for u in unknown
                        if isinstance(field, serializers.Serializer) and u in field.fields
                    ]
                    missing[name] = ["This field is required."]
                    if inner:
                        names = ", ".join(f"`{u}`" for u in inner)
                        verb = "goes" if len(inner) == 1 else "go"
                        missing[name] = [f"This field is required ({names} {verb} inside it)."]
                        for u in inner:
                            unknown_errors[u] = [f"Unknown field: it belongs inside `{name}`."]
                errors = {**missing, **unknown_errors}
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class CleanCharField(serializers.CharField):
    """A CharField that takes only strings and refuses NUL characters (PostgreSQL cannot store
    them; nothing needs them)."""

    def to_internal_value(self, data):
        # Strict: a number is not a string (DRF would quietly turn 123 into "123").
        if not isinstance(data, str):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if "\x00" in value:
            raise serializers.ValidationError("Must not contain NUL characters.")
        return value


class UserRefField(CleanCharField):
    """A user ref (SPEC §0): Django's username rules — 1–150 letters, digits and @/./+/-/_."""

    def __init__(self, **kwargs):
        from django.contrib.auth import get_user_model

        kwargs.setdefault("max_length", 150)
        super().__init__(**kwargs)
        username = get_user_model()._meta.get_field("username")
        self.validators.extend(v for v in username.validators if not hasattr(v, "limit_value"))


class CharacterSlugField(serializers.SlugField):
    """A character slug: what `PUT /characters/{slug}` accepts (letters, digits, - and _; at
    most 100), a string and nothing else."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 100)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class PageQuery(StrictSerializer):
    """The query of every §10 list: an offset page of at most 500 items (50 by default).
    Subclasses add the list's filters; like every strict input it refuses parameters it does
    not define (400 naming them)."""

    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="How many items to answer: 50 by default, at most 500 (a larger limit "
        "answers 500).",
    )
    offset = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="How many items to skip from the start of the list (0 by default); `next` "
        "and `previous` carry the offsets of the neighbouring pages.",
    )


class EmptyQuery(StrictSerializer):
    """The query of a read that takes no parameters: any parameter is refused (400 naming
    it), so a misspelt one is never silently ignored."""


class BoundedIntegerField(serializers.IntegerField):
    """An integer that fits its column: 64-bit signed by default (`bits=32` for an integer
    column), never negative unless `min_value` says so. A bool is not an integer."""

    def __init__(self, *, bits: int = 64, **kwargs):
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", 2 ** (bits - 1) - 1)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class ContextInput(StrictSerializer):
    """A context names the ids its kind takes and leaves the others out (C7: not `null`)."""

    user = CleanCharField(max_length=150)
    character = serializers.SlugField(max_length=100, required=False)
    conversation = serializers.UUIDField(required=False, format="hex_verbose")
    scene = CleanCharField(max_length=SCENE_MAX, required=False)
    now = serializers.DateTimeField(required=False)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value.get("conversation") is not None:
            value["conversation"] = str(value["conversation"])
        return value


class ScopeShapeMixin:
    """Validates a scope's shape: exactly the references its kind needs. `scope_input` makes
    the serializers, each naming its kinds and what each requires (`REQUIRED`)."""

    REQUIRED: dict[str, set[str]] = {}

    def validate(self, attrs):
        kind = attrs["kind"]
        needed = self.REQUIRED[kind]
        errors = {}
        for name in ("character", "conversation", "scene"):
            if name in needed and name not in attrs:
                errors[name] = [f"Required for a {kind} scope."]
            elif name not in needed and name in attrs:
                errors[name] = [f"Not allowed for a {kind} scope."]
        if errors:
            raise serializers.ValidationError(errors)
        if "conversation" in attrs:
            attrs["conversation"] = str(attrs["conversation"])
        return attrs


def scope_input(
    name: str, kind: serializers.ChoiceField, *, widest: str, doc: str, module: str = __name__
) -> type:
    """A scope's input serializer: the kind, then the references a kind may need — memory's
    scopes (widest `user`, SPEC §10) and a rule's (widest `global`, §6) differ only in the
    widest kind's name, so both are made here."""
    fields = {
        "kind": kind,
        "character": serializers.SlugField(max_length=100, required=False),
        "conversation": serializers.UUIDField(required=False, format="hex_verbose"),
        "scene": CleanCharField(max_length=SCENE_MAX, required=False),
    }
    required = {
        widest: set(),
        "character": {"character"},
        "conversation": {"conversation"},
        "scene": {"conversation", "scene"},
    }
    attrs = {**fields, "REQUIRED": required, "__doc__": doc, "__module__": module}
    return type(name, (ScopeShapeMixin, StrictSerializer), attrs)


ScopeInput = scope_input(
    "ScopeInput",
    serializers.ChoiceField(choices=["user", "character", "conversation", "scene"]),
    widest="user",
    doc='A memory scope: {"kind": "user"} · character · conversation · scene (SPEC §10).',
)


class ScopeOutput(serializers.Serializer):
    kind = serializers.CharField()
    character = serializers.CharField(required=False)
    conversation = serializers.CharField(required=False)
    scene = serializers.CharField(required=False)
