"""Scopes (`conversations.scopes`, SPEC §1, §6): their ids and the parsing of them, their JSON
shape, whether one applies at a place (R1, D1) and the columns a stored one fills — the one
home memory and policy share, tested without a database."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conversations.domain import Context
from conversations.scopes import (
    SCOPE_REFERENCES,
    USER_SCOPE_COLUMNS,
    Scope,
    place_of_scope_ids,
    scope_applies,
    scope_columns,
    scope_dict_of_id,
    scope_ids_of,
    scope_of_id,
)

CONV = "8d3c1f5e-2b7a-4c1e-9f0a-1b2c3d4e5f60"
refs = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=12)
scenes = st.text(st.characters(categories=["L", "N", "P"]), min_size=1, max_size=12)
scopes = st.one_of(
    st.just(Scope("user")),
    refs.map(lambda slug: Scope("character", character=slug)),
    st.just(Scope("conversation", conversation=CONV)),
    scenes.map(lambda scene: Scope("scene", conversation=CONV, scene=scene)),
)


@given(scope=scopes, user=refs)
def test_it_reads_back_every_scope_from_its_id(scope, user):
    assert scope_of_id(scope.scope_id(user)) == scope
    assert scope_dict_of_id(scope.scope_id(user)) == scope.as_dict()


def test_it_names_the_scopes_of_a_place_widest_first_as_spec_section_1_says():
    assert scope_ids_of("wren", "rowan", CONV, "roof:top") == [
        "user:wren",
        "character:wren:rowan",
        f"conversation:{CONV}",
        f"scene:{CONV}:roof:top",
    ]
    assert scope_ids_of("wren", None, None, None) == ["user:wren"]


def test_it_finds_the_place_back_from_its_scope_ids_even_when_a_scene_holds_colons():
    ids = scope_ids_of("wren", "rowan", CONV, "roof:top")
    assert place_of_scope_ids(ids) == {
        "character": "rowan",
        "conversation": CONV,
        "scene": "roof:top",
    }
    assert place_of_scope_ids(["user:wren"]) == {
        "character": None,
        "conversation": None,
        "scene": None,
    }


def test_it_shapes_a_forgets_every_scope_as_everywhere():
    assert scope_dict_of_id("*") == {"kind": "everywhere"}


@pytest.mark.parametrize(
    ("scope", "applies"),
    [
        (Scope("user"), True),
        (Scope("global"), True),
        (Scope("character", character="rowan"), True),
        (Scope("character", character="mira"), False),
        (Scope("conversation", conversation=CONV), True),
        (Scope("conversation", conversation="other"), False),
        (Scope("scene", conversation=CONV, scene="roof"), True),
        (Scope("scene", conversation=CONV, scene="cellar"), False),
        (Scope("scene", conversation="other", scene="roof"), False),
        (Scope("planet"), False),
    ],
)
def test_it_applies_a_scope_only_where_its_references_are_the_places(scope, applies):
    """R1 and D1: memory's `user` and policy's `global` apply everywhere."""
    assert scope_applies(scope, "rowan", CONV, "roof") is applies


def test_it_applies_no_narrower_scope_at_a_place_that_does_not_name_it():
    assert scope_applies(Scope("character", character=None), None, None, None) is False
    assert scope_applies(Scope("scene", conversation=CONV, scene="roof"), None, CONV, None) is False


def test_it_matches_a_context_only_for_its_own_user():
    ctx = Context(user="wren", character="rowan", conversation=CONV, now=datetime.now(UTC))
    assert ctx.matches(Scope("user"), "wren") is True
    assert ctx.matches(Scope("user"), "sam") is False


def test_it_fills_each_narrower_scopes_columns_with_exactly_its_references():
    columns = scope_columns("wren", ("rowan", 7), CONV, "roof")
    assert columns == {
        "character:wren:rowan": {
            "scope_kind": "character",
            "character_id": 7,
            "conversation_id": None,
            "scene": None,
        },
        f"conversation:{CONV}": {
            "scope_kind": "conversation",
            "character_id": None,
            "conversation_id": CONV,
            "scene": None,
        },
        f"scene:{CONV}:roof": {
            "scope_kind": "scene",
            "character_id": None,
            "conversation_id": CONV,
            "scene": "roof",
        },
    }
    for row in columns.values():
        kind = row["scope_kind"]
        filled = {name.removesuffix("_id") for name in row if name != "scope_kind" and row[name]}
        assert filled == set(SCOPE_REFERENCES[kind])
    assert scope_columns("wren", None, None, None) == {}
    assert set(USER_SCOPE_COLUMNS) == set(next(iter(columns.values())))
