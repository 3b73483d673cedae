"""Strict tool arguments (SPEC §15 M3, C1, C7): a tool's input schema is a flat JSON object
schema, and its arguments are checked against it exactly — an unknown argument, a missing
required one, a wrong JSON type (a boolean is not an integer, `"1"` is not a number), a
string too long or holding a NUL, a value outside its choices: each refused, naming the
argument. Pure: the standard library only."""

from __future__ import annotations

from collections.abc import Mapping

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


class ArgumentError(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _valid_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


def _check_one(name: str, value, rule: Mapping) -> None:
    kind = rule["type"]
    if not _TYPES[kind](value):
        raise ArgumentError(name, f"must be a JSON {kind}.")
    if kind == "string":
        if not _valid_text(value):
            raise ArgumentError(name, "must be text without NUL or unpaired surrogates.")
        if len(value) < rule.get("minLength", 0):
            raise ArgumentError(name, "must not be empty.")
        if len(value) > rule.get("maxLength", 10_000):
            raise ArgumentError(name, f"must be at most {rule.get('maxLength', 10_000)} long.")
    if "enum" in rule and value not in rule["enum"]:
        raise ArgumentError(name, f"must be one of: {', '.join(map(str, rule['enum']))}.")
    if kind == "integer":
        if value < rule.get("minimum", value) or value > rule.get("maximum", value):
            raise ArgumentError(
                name, f"must be from {rule.get('minimum')} to {rule.get('maximum')}."
            )


def checked(schema: Mapping, arguments) -> dict:
    """`arguments` (None is no arguments) checked against `schema`: the arguments as given,
    or ArgumentError for the first problem in argument-name order."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ArgumentError("arguments", "must be a JSON object.")
    properties = schema.get("properties", {})
    for name in sorted(arguments, key=str):
        if name not in properties:
            # An unknown name is echoed only when it is plain words (never a NUL, a lone
            # surrogate or a whole paragraph in the answer).
            plain = isinstance(name, str) and 0 < len(name) <= 64 and name.isprintable()
            if plain and _valid_text(name):
                raise ArgumentError(name, "is not an argument of this tool.")
            raise ArgumentError("arguments", "holds an argument this tool does not take.")
    for name in schema.get("required", ()):
        if name not in arguments:
            raise ArgumentError(name, "is required.")
    for name in sorted(arguments):
        _check_one(name, arguments[name], properties[name])
    return dict(arguments)
