"""Strict tool arguments (SPEC §15 M3, C1, C7), pure: a JSON object of exactly the declared
arguments, each of exactly its JSON type, no NUL, within its length, range and choices."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.arguments import ArgumentError, checked
from agents.tools import TOOLS

SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": 10},
        "limit": {"type": "integer", "minimum": 1, "maximum": 5},
        "everywhere": {"type": "boolean"},
        "state": {"type": "string", "enum": ["active", "forgotten"]},
    },
    "required": ["text"],
    "additionalProperties": False,
}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=5,
)


def test_it_takes_exactly_the_declared_arguments():
    args = {"text": "hi", "limit": 5, "everywhere": False, "state": "active"}
    assert checked(SCHEMA, args) == args
    assert checked({"type": "object", "properties": {}}, None) == {}


@pytest.mark.parametrize(
    "args, field",
    [
        ({"text": "hi", "extra": 1}, "extra"),
        ({}, "text"),
        ({"text": 1}, "text"),
        ({"text": ""}, "text"),
        ({"text": "x" * 11}, "text"),
        ({"text": "a\x00b"}, "text"),
        ({"text": "\ud800"}, "text"),
        ({"text": "hi", "limit": True}, "limit"),
        ({"text": "hi", "limit": 1.0}, "limit"),
        ({"text": "hi", "limit": "1"}, "limit"),
        ({"text": "hi", "limit": 6}, "limit"),
        ({"text": "hi", "everywhere": "yes"}, "everywhere"),
        ({"text": "hi", "everywhere": 1}, "everywhere"),
        ({"text": "hi", "state": "gone"}, "state"),
        ({"text": "hi", "state": None}, "state"),
    ],
)
def test_it_refuses_what_is_not_exactly_its_schema_naming_the_argument(args, field):
    """C1: an unknown argument; C7: a wrong JSON type (no `1` for true, no `"1"` for 1)."""
    with pytest.raises(ArgumentError) as refused:
        checked(SCHEMA, args)
    assert refused.value.field == field


@given(st.dictionaries(st.text(max_size=8), JSON, max_size=4))
def test_it_answers_any_json_object_with_the_arguments_or_an_argument_error(args):
    """Property: never another exception; what it accepts fits the schema exactly."""
    try:
        accepted = checked(SCHEMA, args)
    except ArgumentError as refused:
        assert refused.field
        return
    assert accepted == args and set(args) <= set(SCHEMA["properties"]) and "text" in args
    assert isinstance(args["text"], str) and 1 <= len(args["text"]) <= 10


@given(st.sampled_from(TOOLS), st.dictionaries(st.text(max_size=8), JSON, max_size=3))
def test_it_checks_every_tools_arguments_the_same_way(tool, args):
    """Every tool declares a strict flat schema the checker reads whole."""
    assert tool.input_schema["additionalProperties"] is False
    assert set(tool.input_schema["required"]) <= set(tool.input_schema["properties"])
    try:
        checked(tool.input_schema, args)
    except ArgumentError:
        pass


def test_it_is_deterministic_about_which_argument_it_names_first():
    """The first problem in argument-name order, whatever the order given."""
    one = {"zz": 1, "aa": 2, "text": "hi"}
    two = dict(reversed(list(one.items())))
    fields = []
    for args in (one, two):
        with pytest.raises(ArgumentError) as refused:
            checked(SCHEMA, args)
        fields.append(refused.value.field)
    assert fields == ["aa", "aa"]
