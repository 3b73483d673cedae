"""What the OpenAPI schema says about requests (SPEC §10 C1): every request body object
refuses unknown fields (`additionalProperties: false`), scopes and contexts are a `oneOf` per
kind, and text fields state what the server checks (no NUL, not blank once trimmed). The
extensions here register when the module is imported (`config.apps`); `postprocess` is the
drf-spectacular postprocessing hook that adds the path parameters' patterns and the problems
of every operation (C3, `config.problems`).

The document is OpenAPI 3.1, whose schemas are JSON Schema: a nullable field is
`"type": [..., "null"]`, or a `oneOf` with `{"type": "null"}` beside a reference — never 3.0's
`nullable: true`. `nullable` and `without_null` are the only places here that write or strip
that mark.

`OperationSchema` is the project's AutoSchema: an operation's method docstring is its
documentation (C6)."""

from __future__ import annotations

import re

from django.core.validators import RegexValidator
from drf_spectacular.drainage import has_override
from drf_spectacular.extensions import (
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import append_meta, get_doc, safe_ref
from rest_framework import serializers

from config import examples, field_docs, problems
from config.serializers import (
    CleanCharField,
    ContextInput,
    ScopeShapeMixin,
    StrictSerializer,
    UserRefField,
)

# Python's `str.strip()` and the `\s` of a regular expression agree on what is whitespace.
NO_NUL = r"^[^\u0000]*$"
NOT_BLANK = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
USER_REF = r"^[\w.@+-]+$"


class OperationSchema(AutoSchema):
    """C6: an operation's documentation is its method's docstring. Its first paragraph is the
    operation's `summary` (a short phrase, no full stop), the rest its `description`; the lines
    of a paragraph are joined by single spaces, paragraphs by a blank line. A view's class
    docstring is for readers of the code (it names the SPEC rules) and never reaches the
    schema; what `extend_schema` says (a webhook's words) still comes first."""

    def _paragraphs(self) -> list[str]:
        method = getattr(self.view, getattr(self.view, "action", self.method.lower()), None)
        blocks = re.split(r"\n[ \t]*\n", get_doc(method)) if method is not None else []
        paragraphs = [" ".join(line.strip() for line in b.strip().splitlines()) for b in blocks]
        return [p for p in paragraphs if p]

    def get_summary(self) -> str | None:
        return next(iter(self._paragraphs()), None)

    def get_description(self) -> str:
        return "\n\n".join(self._paragraphs()[1:])


def nullable(schema: dict) -> dict:
    """`schema` that also admits null, marked as the document's OpenAPI version marks it."""
    return append_meta(without_null(schema), {"nullable": True})


def without_null(schema: dict) -> dict:
    """`schema` that no longer admits null: 3.0's `nullable`, a `"null"` in a type list, or a
    `{"type": "null"}` member of a `oneOf` taken out."""
    schema = dict(schema)
    schema.pop("nullable", None)
    if isinstance(schema.get("type"), list):
        kinds = [kind for kind in schema["type"] if kind != "null"]
        schema["type"] = kinds[0] if len(kinds) == 1 else kinds
    members = schema.get("oneOf")
    if members and {"type": "null"} in members:
        members = [member for member in members if member != {"type": "null"}]
        del schema["oneOf"]
        if len(members) == 1:
            return safe_ref({**members[0], **schema})
        schema["oneOf"] = members
    return schema


def _closed(schema: dict) -> dict:
    if schema.get("type") == "object":
        schema["additionalProperties"] = False
    return schema


class StrictSerializerSchema(OpenApiSerializerExtension):
    """C1: a strict input refuses unknown fields, and its request schema says so."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return _closed(schema) if direction == "request" else schema


def _variant(auto_schema, serializer, direction, present: dict[str, bool], const=None) -> dict:
    """One `oneOf` member: the fields `present` names (True: required), no others. A reference
    is nullable only in a scope that reads `null` as absent (`NULLS_ABSENT`, C7)."""
    properties, required = {}, []
    nulls_absent = getattr(serializer, "NULLS_ABSENT", False)
    for name, needed in present.items():
        field = serializer.fields[name]
        schema = auto_schema._map_serializer_field(field, direction)
        auto_schema._insert_field_validators(field, schema)
        schema = without_null(schema)
        if nulls_absent and name != "kind":
            schema = nullable(schema)
        schema.pop("readOnly", None)
        if const is not None and name == "kind":
            schema = {"type": "string", "enum": [const]}
        properties[name] = schema
        if needed:
            required.append(name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


class KindsSchema(OpenApiSerializerExtension):
    """C1: an input that is one of its kinds is, in a request, a `oneOf` with a member per
    kind (`members`); in an answer it keeps its serializer's own shape."""

    priority = 1

    def members(self, auto_schema, direction) -> list[dict]:
        raise NotImplementedError

    def description(self) -> str:
        raise NotImplementedError

    def map_serializer(self, auto_schema, direction):
        if direction != "request":
            return auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {"oneOf": self.members(auto_schema, direction), "description": self.description()}


class ScopeSchema(KindsSchema):
    """C1: a scope is one of its kinds, each with exactly the ids that kind takes
    (`ScopeShapeMixin.REQUIRED`), so the schema refuses what the server refuses."""

    target_class = ScopeShapeMixin
    match_subclasses = True

    def members(self, auto_schema, direction) -> list[dict]:
        serializer, members = self.target, []
        for kind, needed in serializer.REQUIRED.items():
            present = {
                "kind": True,
                **{name: True for name in ("character", "conversation", "scene") if name in needed},
            }
            members.append(_variant(auto_schema, serializer, direction, present, const=kind))
        return members

    def description(self) -> str:
        return _doc(self.target)


# A context names a user and, for each of its kinds, the ids that kind takes (SPEC §10).
CONTEXT_KINDS = {
    "user": {"user": True, "now": False},
    "character": {"user": True, "character": True, "now": False},
    "conversation": {"user": True, "character": False, "conversation": True, "now": False},
    "scene": {"user": True, "character": False, "conversation": True, "scene": True, "now": False},
}


CONTEXT_DESCRIPTION = (
    "A context: a user's, a character's, a conversation's or a scene's (a scene needs its "
    "conversation). A conversation with another character than `character` is refused (400 "
    "naming `context.conversation`)."
)


class ContextSchema(KindsSchema):
    """C1: a context is a user's, a character's, a conversation's or a scene's; a scene needs
    its conversation. Naming a conversation with another character than `character` is a
    cross-field rule the schema cannot state (400 naming `context.conversation`)."""

    target_class = ContextInput

    def members(self, auto_schema, direction) -> list[dict]:
        return [
            _variant(auto_schema, self.target, direction, present)
            for present in CONTEXT_KINDS.values()
        ]

    def description(self) -> str:
        return CONTEXT_DESCRIPTION


def _doc(serializer) -> str:
    doc = (type(serializer).__doc__ or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ")


def _field_schema(auto_schema, field, direction) -> dict:
    """A field's own schema under a field extension, without its null: drf-spectacular marks
    the extension's answer nullable again, and a 3.1 type list must not name `"null"` twice."""
    return without_null(auto_schema._map_serializer_field(field, direction, bypass_extensions=True))


class CleanCharSchema(OpenApiSerializerFieldExtension):
    """A text field never holds NUL; one that is trimmed and may not be blank needs a
    character that is not whitespace."""

    target_class = CleanCharField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = _field_schema(auto_schema, self.target, direction)
        field = self.target
        if has_override(field, "field"):
            return schema  # the field says its own schema (`extend_schema_field`)
        if any(isinstance(v, RegexValidator) for v in field.validators):
            return schema  # its own pattern, added from the validator
        if "pattern" not in schema and "enum" not in schema and direction == "request":
            blank_refused = not field.allow_blank and field.trim_whitespace
            schema["pattern"] = NOT_BLANK if blank_refused else NO_NUL
        return schema


TIME_DESCRIPTION = (
    "An RFC 3339 time (`T` and `Z` in capitals, seconds below 60) that is an "
    "instant in years 1–9999 in UTC (SPEC §0)."
)


class TimeSchema(OpenApiSerializerFieldExtension):
    """A time in a request says what the server takes (its own help text stays first)."""

    target_class = serializers.DateTimeField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = _field_schema(auto_schema, self.target, direction)
        if direction == "request" and not has_override(self.target, "field"):
            schema["description"] = " ".join(
                filter(
                    None, [self.target.help_text and str(self.target.help_text), TIME_DESCRIPTION]
                )
            )
        return schema


class UserRefSchema(OpenApiSerializerFieldExtension):
    target_class = UserRefField
    priority = 1

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "string", "minLength": 1, "maxLength": 150, "pattern": USER_REF}


# Path parameters: what each route's converter and the view check (C1), and what each names (C6).
PATH_PARAMETERS = {
    "user_ref": {"type": "string", "minLength": 1, "maxLength": 150, "pattern": USER_REF},
    "slug": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": r"^[-a-zA-Z0-9_]+$"},
}
PATH_DESCRIPTIONS = {
    "user_ref": "The user's ref: the runtime's own id for the person (1–150 letters, digits "
    "and `@`, `.`, `+`, `-`, `_`), as `PUT /users/{user_ref}` created it.",
    "slug": "The character's slug (letters, digits, `-` and `_`).",
    "conversation_id": "The conversation's id, as `POST /conversations` answered it.",
    "turn_id": "The turn's id, as `POST /conversations/{id}/turns` answered it.",
    "memory_id": "The memory's id.",
    "tombstone_id": "The tombstone's id, as the forget answered it.",
    "rule_id": "The rule's id.",
    "job_id": "The media job's id, as `POST /media-jobs` answered it.",
}

# C6: the operations grouped by what they are about, in this order in the browsable docs.
TAGS = [
    {
        "name": "users and characters",
        "description": "The people the runtime talks for and the characters they talk with; a "
        "user's export, import and erasure.",
    },
    {
        "name": "conversations and turns",
        "description": "Conversations, their messages, and turns: the user's message in, the "
        "prompt plan, the companion's reply.",
    },
    {
        "name": "memories",
        "description": "What the companion remembers about a user: write, read, confirm, "
        "correct, retract, resolve for a context, learn from text, ask; the "
        "user's learn and use switches.",
    },
    {
        "name": "forgetting",
        "description": "Forget a memory for good and undo a forget: tombstones hold the key and "
        "scope forgotten, never the value.",
    },
    {
        "name": "policy",
        "description": "Boundaries: which capabilities (tone, voice, images…) the companion may "
        "use, decided from the user's rules and the product's defaults.",
    },
    {
        "name": "media jobs",
        "description": "Voice and image jobs, admitted and started only when the boundaries allow.",
    },
    {
        "name": "events",
        "description": "What changed, for copies of the data kept outside this service.",
    },
]

# The first pattern that matches an operation's path (below /api/v1) names its tag.
_TAG_OF_PATH = [
    (r"^/users/[^/]+/memory-settings$", "memories"),
    (r"^/(users|characters)(/|$)", "users and characters"),
    (r"^/(conversations|turns)(/|$)", "conversations and turns"),
    (r"^/memories/[^/]+/forget$", "forgetting"),
    (r"^/tombstones(/|$)", "forgetting"),
    (r"^/(memories|memory)(/|$)", "memories"),
    (r"^/policy(/|$)", "policy"),
    (r"^/media-jobs(/|$)", "media jobs"),
    (r"^/events(/|$)", "events"),
]


def tag_of(path: str) -> str | None:
    """The C6 tag of an API path (`/api/v1/...`), or None outside the API's groups."""
    rest = path.removeprefix("/api/v1")
    return next((tag for pattern, tag in _TAG_OF_PATH if re.match(pattern, rest)), None)


def _describe_properties(component: str, schema: dict) -> None:
    """C6: give every property of a shape without a description the one `config.field_docs`
    has; a property that is only a `$ref` carries it beside the reference (`allOf`)."""
    for member in schema.get("oneOf", []):
        if "$ref" not in member:
            _describe_properties(component, member)
    for name, prop in (schema.get("properties") or {}).items():
        if prop.get("description"):
            continue
        text = field_docs.describe(component, name)
        if text is None:
            continue
        if set(prop) == {"$ref"}:
            schema["properties"][name] = {"allOf": [prop], "description": text}
        else:
            prop["description"] = text


def nullable_enums(result, generator, request, public):
    """drf-spectacular postprocessing hook, run before its enum hook: a nullable enum (a
    `"null"` in its type list) lists null among its values, as JSON Schema needs to admit it;
    the enum hook then makes it a `oneOf` of the named enum and `NullEnum` instead of dropping
    the null (as it would for an enum given by `extend_schema_field`, like a time zone)."""
    _admit_null_in_enums(result)
    return result


def _admit_null_in_enums(node) -> None:
    if isinstance(node, list):
        for item in node:
            _admit_null_in_enums(item)
        return
    if not isinstance(node, dict):
        return
    kinds = node.get("type")
    enum = node.get("enum")
    if isinstance(kinds, list) and "null" in kinds and enum is not None and None not in enum:
        node["enum"] = [*enum, None]
    for value in node.values():
        _admit_null_in_enums(value)


def postprocess(result, generator, request, public):
    """drf-spectacular postprocessing hook: path parameter patterns (C1), the problems of
    every operation (C3), an example request of each (`config.examples`), and the plain
    words of C6: each operation's tag, each path parameter's and each field's description."""
    used = set()
    for path, path_item in result.get("paths", {}).items():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            tag = tag_of(path)
            if tag is not None:
                operation["tags"] = [tag]
                used.add(tag)
            for parameter in operation.get("parameters", []):
                if parameter.get("in") != "path":
                    continue
                if parameter["name"] in PATH_PARAMETERS:
                    parameter["schema"] = dict(PATH_PARAMETERS[parameter["name"]])
                if parameter["name"] in PATH_DESCRIPTIONS and not parameter.get("description"):
                    parameter["description"] = PATH_DESCRIPTIONS[parameter["name"]]
    for name, schema in result.get("components", {}).get("schemas", {}).items():
        _describe_properties(name, schema)
    result["tags"] = [tag for tag in TAGS if tag["name"] in used]
    problems.document(result)
    examples.document(result)
    return result
