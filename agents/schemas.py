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
PROBLEM = {
    "type": "object",
    "description": "A refusal: the problem's stable `code` and its `detail` in words.",
    "properties": {"code": {"type": "string"}, "detail": {"type": "string"}},
    "required": ["code", "detail"],
}
