"""Prompt projection (SPEC §5 P1–P4, and F7.2's withholding before them) on the resolver's
active records. No database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversations.scopes import Scope
from memory.domain import MemoryRecord, scope_covers
from memory.projection import certainty_of, project

T0 = datetime(2026, 8, 1, tzinfo=UTC)
USER = "ana"
CONV = "6f1c3f0e-6a1d-4a57-9d0e-3b8c2f1a9e10"
MANY = frozenset({"user.likes"})
LABELS = {"basil_plant.name": "Basil plant's name", "user.likes": "Likes"}

SCOPES = {
    "user": Scope("user"),
    "character": Scope("character", character="captain-rowan"),
    "conversation": Scope("conversation", conversation=CONV),
    "scene": Scope("scene", conversation=CONV, scene="greenhouse"),
}


def rec(
    id: str,
    *,
    key: str = "basil_plant.name",
    value: str = "Harbor",
    scope: str = "user",
    authority: str = "rule-extracted",
    confidence: float = 1.0,
    sources: tuple[str, ...] = ("m1",),
    vf: float = 0,
    version: int = 1,
) -> MemoryRecord:
    moment = T0 + timedelta(hours=vf)
    return MemoryRecord(
        id=id,
        user=USER,
        key=key,
        value=value,
        scope=SCOPES[scope],
        authority=authority,
        valid_from=moment,
        recorded_at=moment,
        evidence_time=moment,
        version=version,
        confidence=confidence,
        sources=sources,
    )


def run(active, **kwargs):
    return project(active, labels=LABELS, many_keys=MANY, **kwargs)


def outcome(projection) -> dict[str, str]:
    """id → certainty for projected records, id → reason for excluded ones."""
    out = {m.record.id: m.certainty for m in projection.prompt}
    out.update({e.id: e.reason for e in projection.excluded})
    return out


# ---------------------------------------------------------------------------------------------
# P1 provenance


@pytest.mark.parametrize(
    ("authority", "sources", "expected"),
    [
        ("model-inferred", ("m1",), "likely"),
        ("model-inferred", (), "unsupported"),
        ("rule-extracted", (), "unsupported"),  # its source messages were deleted
        ("user-confirmed", (), "confirmed"),  # the user's own word needs no source
        ("user-corrected", (), "confirmed"),
    ],
)
def test_it_needs_a_surviving_source_unless_the_user_said_it(authority, sources, expected):
    """P1: user-confirmed/corrected records are always injectable; any other needs at least
    one source message that still exists, else `unsupported`."""
    active = [rec("a", authority=authority, sources=sources, confidence=0.9)]
    assert outcome(run(active)) == {"a": expected}


def test_it_runs_the_provenance_gate_before_certainty():
    """P1 before P2: an unsupported low-confidence record says unsupported."""
    assert outcome(run([rec("a", sources=(), confidence=0.1)])) == {"a": "unsupported"}


# ---------------------------------------------------------------------------------------------
# P2 certainty


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [
        (1.0, "likely"),
        (0.85, "likely"),  # the likely threshold is inclusive
        (0.8499, "uncertain"),
        (0.5, "uncertain"),  # the uncertain threshold is inclusive
        (0.49, "low-confidence"),
        (0.0, "low-confidence"),
    ],
)
def test_it_grades_certainty_at_the_exact_thresholds(confidence, expected):
    """P2: confidence >= 0.85 likely, 0.5 <= confidence < 0.85 uncertain, below 0.5
    low-confidence (excluded)."""
    assert outcome(run([rec("a", confidence=confidence)])) == {"a": expected}


def test_it_calls_the_users_word_confirmed_whatever_its_confidence():
    """P2: user-confirmed/corrected → confirmed."""
    active = [rec("a", authority="user-corrected", confidence=0.1)]
    assert outcome(run(active)) == {"a": "confirmed"}
    assert certainty_of(active[0]) == "confirmed"


def test_it_takes_the_thresholds_as_settings():
    """P2: thresholds are settings."""
    active = [rec("a", confidence=0.7)]
    assert outcome(run(active, likely=0.7, uncertain=0.6)) == {"a": "likely"}
    assert outcome(run(active, likely=0.9, uncertain=0.75)) == {"a": "low-confidence"}


# ---------------------------------------------------------------------------------------------
# P3 shadowing


def test_it_projects_only_the_narrowest_scope_of_a_one_key_across_four_scopes():
    """P3: scene > conversation > character > user; the wider ones are shadowed, so the
    model never sees two values for one single-valued slot."""
    active = [
        rec("u", scope="user", value="Harbor"),
        rec("c", scope="character", value="Harbour"),
        rec("v", scope="conversation", value="Marlowe"),
        rec("s", scope="scene", value="Greenhouse Basil"),
    ]
    projection = run(active)
    assert outcome(projection) == {"s": "likely", "u": "shadowed", "c": "shadowed", "v": "shadowed"}
    assert [m.value for m in projection.prompt] == ["Greenhouse Basil"]
    # without the scene record, the conversation wins; then the character; then the user
    assert [m.record.id for m in run(active[:3]).prompt] == ["v"]
    assert [m.record.id for m in run(active[:2]).prompt] == ["c"]
    assert [m.record.id for m in run(active[:1]).prompt] == ["u"]


def test_it_does_not_let_an_excluded_record_shadow_a_usable_one():
    """P1/P2 before P3: a narrower record that is unsupported or low-confidence is already
    out, so the wider usable value is projected."""
    active = [
        rec("u", scope="user", value="Harbor"),
        rec("v", scope="conversation", value="Marlowe", sources=()),
        rec("s", scope="scene", value="Basil", confidence=0.2),
    ]
    assert outcome(run(active)) == {"u": "likely", "v": "unsupported", "s": "low-confidence"}


def test_it_projects_the_union_of_a_many_key_with_each_value_once():
    """P3: a many key projects every value, each normalised value once (the narrowest
    scope's record); duplicates are shadowed."""
    active = [
        rec("u-jazz", key="user.likes", value="jazz", scope="user"),
        rec("c-jazz", key="user.likes", value=" Jazz ", scope="character"),
        rec("s-jazz", key="user.likes", value="JAZZ", scope="scene"),
        rec("u-rain", key="user.likes", value="rainy days", scope="user"),
        rec("v-tea", key="user.likes", value="tea", scope="conversation"),
    ]
    projection = run(active)
    assert outcome(projection) == {
        "s-jazz": "likely",
        "u-rain": "likely",
        "v-tea": "likely",
        "u-jazz": "shadowed",
        "c-jazz": "shadowed",
    }
    assert sorted(m.value for m in projection.prompt) == ["JAZZ", "rainy days", "tea"]


def test_it_breaks_a_same_scope_tie_by_the_resolver_order():
    """P3: two records of one scope kind for one key cannot come from one context, but the
    choice is still deterministic (R6 order: authority, valid_from, version, id)."""
    active = [
        rec("b", scope="character", value="Harbor", vf=1),
        rec("a", scope="character", value="Marlowe", vf=1),
        rec("z", scope="character", value="Rex", authority="user-confirmed"),
    ]
    assert [m.record.id for m in run(active).prompt] == ["z"]
    assert [m.record.id for m in run(list(reversed(active[:2]))).prompt] == ["a"]


# ---------------------------------------------------------------------------------------------
# P4 shape and order


def test_it_gives_the_model_the_narrow_shape_with_a_label():
    """P4: {key, label, value, certainty, scope}; the registry label or a default one."""
    active = [rec("a", scope="scene"), rec("b", key="people.marcus.lives_in", value="Seattle")]
    prompt = {m.record.id: m.as_prompt() for m in run(active).prompt}
    assert prompt["a"] == {
        "key": "basil_plant.name",
        "label": "Basil plant's name",
        "value": "Harbor",
        "certainty": "likely",
        "scope": {"kind": "scene", "conversation": CONV, "scene": "greenhouse"},
    }
    assert prompt["b"]["label"] == "Marcus: lives in"
    assert set(prompt["b"]) == {"key", "label", "value", "certainty", "scope"}


def test_it_orders_the_prompt_as_the_planner_fills_it():
    """I3: confirmed → likely → uncertain, then narrower scope first, then newer valid_from
    first, then id; `excluded` is ordered by id."""
    active = [
        rec("u-old", key="a.one", scope="user", vf=1),
        rec("u-new", key="a.two", scope="user", vf=5),
        rec("s-likely", key="a.three", scope="scene", vf=0),
        rec("unsure", key="a.four", scope="scene", confidence=0.6, vf=9),
        rec("conf", key="a.five", scope="user", authority="user-confirmed", vf=0),
        rec("tie-b", key="a.six", scope="character", vf=3),
        rec("tie-a", key="a.seven", scope="character", vf=3),
        rec("zz", key="a.eight", sources=()),
        rec("aa", key="a.nine", confidence=0.1),
    ]
    projection = run(active)
    assert [m.record.id for m in projection.prompt] == [
        "conf",
        "s-likely",
        "tie-a",
        "tie-b",
        "u-new",
        "u-old",
        "unsure",
    ]
    assert [e.id for e in projection.excluded] == ["aa", "zz"]
    assert projection == run(list(reversed(active)))


# ---------------------------------------------------------------------------------------------
# F7.2: withheld memories, after the resolver and before P1


def held(record: MemoryRecord, *tombstones: str) -> MemoryRecord:
    return replace(record, withheld_by=tuple(sorted(tombstones)))


def test_it_withholds_before_p1_with_its_own_reason_f7_2():
    """F7.2: a record a covering tombstone withholds is excluded as `withheld` whatever P1–P3
    would say of it (here it has no source: P1 would say `unsupported`)."""
    bare = held(rec("a", key="people.priya.works_at", sources=()), "t1")
    kept = rec("b", key="user.likes", value="green tea")
    found = run([bare, kept], withholding=frozenset({"t1"}))
    assert outcome(found) == {"a": "withheld", "b": "likely"}


def test_it_does_not_withhold_where_no_covering_tombstone_holds_the_record_f7_2():
    """F7.2: only the tombstones whose scope covers the context withhold there."""
    record = held(rec("a"), "t-elsewhere")
    assert outcome(run([record], withholding=frozenset({"t-here"}))) == {"a": "likely"}
    assert outcome(run([record])) == {"a": "likely"}


def test_it_lets_a_wider_record_through_when_the_narrow_one_is_withheld_f7_2():
    """F7.2 before P3: a withheld record shadows nothing (like P1 and P2's exclusions), while
    the resolver's slot winners stay as they are (R1–R8 unchanged)."""
    narrow = held(rec("n", scope="conversation", value="Marlowe"), "t1")
    wide = rec("w", scope="user", value="Harbor")
    found = run([narrow, wide], withholding=frozenset({"t1"}))
    assert outcome(found) == {"n": "withheld", "w": "likely"}


@pytest.mark.parametrize(
    ("scope_id", "character", "conversation", "covers"),
    [
        ("*", None, None, True),
        ("user:ana", "other", "c2", True),
        ("character:ana:captain-rowan", "captain-rowan", "c1", True),
        ("character:ana:captain-rowan", "captain-rowan", None, True),
        ("character:ana:captain-rowan", "other", "c2", False),
        ("character:ana:captain-rowan", None, None, False),
        (f"conversation:{CONV}", "captain-rowan", CONV, True),
        (f"conversation:{CONV}", "captain-rowan", "c2", False),
        (f"scene:{CONV}:greenhouse", "captain-rowan", CONV, True),
        (f"scene:{CONV}:greenhouse", "captain-rowan", None, False),
    ],
)
def test_it_maps_a_tombstones_scope_to_the_contexts_it_covers_f6_f7_2(
    scope_id, character, conversation, covers
):
    """F6's mapping, used by F7.2: user or * → every context; character → the contexts with
    that character; conversation or scene → the contexts in that conversation."""
    assert scope_covers(scope_id, character=character, conversation=conversation) is covers


_ids = st.sampled_from(("t1", "t2", "t3"))


@given(
    st.lists(
        st.tuples(
            st.sampled_from(("basil_plant.name", "user.likes", "pet.name")),
            st.sampled_from(("user", "character", "conversation", "scene")),
            st.sampled_from(("Harbor", "tea", "Rex")),
            st.sets(_ids, max_size=2),
            st.booleans(),
        ),
        max_size=8,
    ),
    st.sets(_ids),
    st.randoms(use_true_random=False),
)
@settings(max_examples=200, deadline=None, derandomize=True)
def test_it_projects_as_if_the_withheld_records_were_not_there_f7_2(rows, withholding, rnd):
    """F7.2, a property against a slow reference: the projection with `withholding` is the
    projection of the records it does not withhold, plus each withheld record as `withheld`;
    and it does not depend on the order of the records."""
    records = [
        held(
            rec(f"r{i}", key=key, scope=scope, value=value, sources=("m1",) if sourced else ()),
            *tombstones,
        )
        for i, (key, scope, value, tombstones, sourced) in enumerate(rows)
    ]
    withholding = frozenset(withholding)
    found = run(records, withholding=withholding)
    out = [r for r in records if set(r.withheld_by) & withholding]
    reference = run([r for r in records if r not in out])
    assert found.prompt == reference.prompt
    assert outcome(found) == {**outcome(reference), **{r.id: "withheld" for r in out}}
    shuffled = list(records)
    rnd.shuffle(shuffled)
    assert run(shuffled, withholding=withholding) == found


# ---------------------------------------------------------------------------------------------
# A connection as the only source (SPEC §15 M3)

TELLER = ("5b0b6f47-9a47-4a3e-8f3e-1d2c3b4a5f60", "Desk")


@pytest.mark.parametrize(
    ("sources", "told_by", "confidence", "expected"),
    [
        ((), TELLER, 1.0, "uncertain"),  # a connection alone: admitted, at most uncertain
        ((), TELLER, 0.6, "uncertain"),
        ((), TELLER, 0.1, "low-confidence"),
        (("m1",), TELLER, 1.0, "likely"),  # a message backs it too: P2 as before
        ((), (), 1.0, "unsupported"),
    ],
)
def test_it_admits_what_a_connection_told_at_most_as_uncertain(
    sources, told_by, confidence, expected
):
    """§15 M3, P1: a record a connection told counts as supported, at most `uncertain` while
    the connection is its only source (no source message)."""
    record = replace(
        rec("a", authority="model-inferred", sources=sources, confidence=confidence),
        told_by=told_by,
    )
    assert outcome(run([record])) == {"a": expected}
    assert certainty_of(record) == (expected if expected != "unsupported" else "likely")


@given(
    st.lists(
        st.tuples(
            st.sampled_from(("basil_plant.name", "user.likes", "pet.name")),
            st.sampled_from(("user", "character", "scene")),
            st.sampled_from(("model-inferred", "rule-extracted", "user-confirmed")),
            st.sampled_from((0.1, 0.5, 0.7, 0.9, 1.0)),
            st.booleans(),
            st.booleans(),
        ),
        max_size=8,
    ),
    st.randoms(use_true_random=False),
)
@settings(max_examples=200, deadline=None, derandomize=True)
def test_it_projects_a_told_record_as_a_sourced_one_capped_at_uncertain(rows, rnd):
    """§15 M3, a property against a slow reference: a record a connection told with no source
    message projects as the same record with a source would, except that a `confirmed` or
    `likely` certainty of a record not in the user's words becomes `uncertain`; and the
    answer does not depend on the records' order."""
    told, reference = [], []
    for i, (key, scope, authority, confidence, sourced, by_connection) in enumerate(rows):
        base = rec(
            f"r{i}",
            key=key,
            scope=scope,
            authority=authority,
            confidence=confidence,
            sources=("m1",) if sourced else (),
        )
        told.append(replace(base, told_by=TELLER) if by_connection else base)
        reference.append(replace(base, sources=("m1",)) if by_connection else base)
    capped = {
        r.id
        for r in told
        if r.told_by and not r.sources and r.authority not in ("user-confirmed", "user-corrected")
    }
    found, expected = outcome(run(told)), outcome(run(reference))
    assert found == {
        i: "uncertain" if i in capped and e in ("confirmed", "likely") else e
        for i, e in expected.items()
    }
    shuffled = list(told)
    rnd.shuffle(shuffled)
    assert run(shuffled) == run(told)
