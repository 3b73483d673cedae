"""The tools' declared input and output schemas (SPEC §15 M3): flat, strict JSON objects
(`additionalProperties: false`), checked by `agents.arguments` before a tool runs."""

from __future__ import annotations

UUID = {"type": "string", "minLength": 1, "maxLength": 64}
SLUG = {"type": "string", "minLength": 1, "maxLength": 100}
TEXT = {"type": "string", "minLength": 1, "maxLength": 2000}
STATES = ["active", "superseded", "expired", "not_yet_valid", "retracted", "forgotten"]


def obj(properties: dict, required=()) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def described(rule: dict, text: str) -> dict:
    return {**rule, "description": text}


NULLABLE_STRING = {"type": ["string", "null"]}
MEMORY = {
    "type": "object",
    "description": "A memory as the API's `GET /memories/{id}` answers it.",
    "properties": {
        "id": {"type": "string"},
        "key": {"type": "string"},
        "value": NULLABLE_STRING,
        "state": {"type": "string"},
        "authority": {"type": "string"},
        "scope": {"type": "object"},
    },
    "required": ["id", "key", "value", "state"],
}
RECALLED = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "key": {"type": "string"},
        "label": {"type": "string"},
        "value": {"type": "string"},
        "certainty": {"type": "string", "enum": ["confirmed", "likely", "uncertain"]},
    },
    "required": ["id", "key", "label", "value", "certainty"],
    "additionalProperties": False,
}
WRITE_RESULT = {
    "type": "object",
    "properties": {
        "outcome": {"type": "string", "enum": ["created", "unchanged", "blocked", "replayed"]},
        "reason": {"type": "string"},
        "memory": {"anyOf": [MEMORY, {"type": "null"}]},
    },
    "required": ["outcome", "memory"],
}
# The forget's answer: the tombstone as `POST /memories/{id}/forget` and `GET /tombstones/{id}`
# answer it (F7.2), never the value.
TOMBSTONE = obj(
    {
        "id": described({"type": "string"}, "The forget's id (the user can undo it)."),
        "user": described({"type": "string"}, "The ref of the user who forgot."),
        "scope": described({"type": "object"}, "Where the forget applies, a memory scope."),
        "scope_id": described({"type": "string"}, "The same scope as its stable id string."),
        "key": described({"type": "string"}, "The memory key forgotten."),
        "has_value_hash": described(
            {"type": "boolean"}, "True when only one value of a many-valued key was forgotten."
        ),
        "forgotten_at": described({"type": "string"}, "When the forget was made."),
        "blocks_sources_before": described(
            {"type": "string"}, "Facts learned from messages older than this are never relearnt."
        ),
        "withheld_messages": described(
            {"type": "integer", "minimum": 0}, "How many messages the forget withholds (F6)."
        ),
        "withheld_memories": described(
            {"type": "integer", "minimum": 0},
            "How many of the user's other memories the forget withholds (F7.2).",
        ),
    },
    [
        "id",
        "user",
        "scope",
        "scope_id",
        "key",
        "has_value_hash",
        "forgotten_at",
        "blocks_sources_before",
        "withheld_messages",
        "withheld_memories",
    ],
)
PROBLEM = {
    "type": "object",
    "description": "A refusal: the problem's stable `code` and its `detail` in words.",
    "properties": {"code": {"type": "string"}, "detail": {"type": "string"}},
    "required": ["code", "detail"],
}
