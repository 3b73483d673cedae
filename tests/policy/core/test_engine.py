"""The pure boundary-policy engine (SPEC §6, D1–D6), table-driven, no database."""

import datetime as dt

import pytest

from conversations.scopes import place_of_scope_ids
from policy.domain import PolicyScope, job_reason
from policy.engine import check_rules, decide, explain

from .rules import (
    CONV,
    CONVERSATION,
    DAY,
    DOWNSTAIRS,
    GLOBAL,
    GREENHOUSE,
    HOUR,
    IMAGE,
    MARLOWE,
    OTHER_CONV,
    PLAYFUL,
    ROWAN,
    T0,
    VOICE,
    WORK,
    context,
    rule,
)

MICRO = dt.timedelta(microseconds=1)


# (Purity of policy/domain.py and policy/engine.py: tests/test_pure_modules.py.)


# ---------------------------------------------------------------------------------------------
# D1 candidates


def test_it_takes_only_rules_of_the_requested_capability_d1():
    decision = decide(VOICE, [rule("a", "deny", capability="media.image")], context())
    assert (decision.effect, decision.reason) == ("ask", "no-applicable-rule")


@pytest.mark.parametrize(
    "scope, applies",
    [
        (GLOBAL, True),
        (ROWAN, True),
        (MARLOWE, False),
        (CONVERSATION, True),
        (PolicyScope("conversation", conversation=OTHER_CONV), False),
        (GREENHOUSE, True),
        (DOWNSTAIRS, False),
        (PolicyScope("scene", conversation=OTHER_CONV, scene="greenhouse"), False),
    ],
)
def test_it_matches_the_scope_against_the_context_d1(scope, applies):
    decision = decide(VOICE, [rule("a", "deny", scope=scope)], context())
    assert decision.effect == ("deny" if applies else "ask")


def test_it_matches_a_global_rule_to_its_own_user_only_d1():
    assert decide(VOICE, [rule("a", "deny", user="someone-else")], context()).effect == "ask"


def test_it_matches_a_global_product_default_to_everyone_d1():
    default = rule("a", "deny", source="product-default")
    assert decide(VOICE, [default], context(user="anyone")).effect == "deny"


def test_it_does_not_apply_a_scene_rule_outside_a_scene_d1():
    assert decide(VOICE, [rule("a", "deny", scope=GREENHOUSE)], context(scene=None)).effect == "ask"


@pytest.mark.parametrize(
    "requested_by, applies", [(None, True), ("user", True), ("automation", False)]
)
def test_it_matches_the_requester_d1(requested_by, applies):
    decision = decide(VOICE, [rule("a", "deny", requested_by=requested_by)], context())
    assert decision.effect == ("deny" if applies else "ask")


@pytest.mark.parametrize(
    "valid_from, valid_until, revoked_at, applies",
    [
        (T0, None, None, True),  # valid_from <= now
        (T0 + HOUR, None, None, False),  # not yet valid
        (T0 - DAY, T0 + HOUR, None, True),
        (T0 - DAY, T0, None, False),  # valid until T is not applied at T
        (T0 - DAY, None, T0 + HOUR, True),  # revoked later than now
        (T0 - DAY, None, T0, False),  # revoked at now
    ],
)
def test_it_applies_a_rule_within_its_clock_boundaries_d1(
    valid_from, valid_until, revoked_at, applies
):
    rules = [
        rule("a", "deny", valid_from=valid_from, valid_until=valid_until, revoked_at=revoked_at)
    ]
    assert decide(VOICE, rules, context()).effect == ("deny" if applies else "ask")


# ---------------------------------------------------------------------------------------------
# D2 nothing applies


def test_it_asks_with_no_applicable_rule_when_there_is_no_candidate_d2():
    decision = decide(VOICE, [], context())
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "ask",
        "no-applicable-rule",
        (),
    )


# ---------------------------------------------------------------------------------------------
# D3 rank and D4 top tier


def test_it_lets_an_explicit_denial_beat_an_inferred_allow_d3():
    rules = [
        rule(
            "inferred",
            "allow",
            capability="media.image",
            source="confirmed-inference",
            scope=GREENHOUSE,
        ),
        rule("explicit", "deny", capability="media.image"),
    ]
    decision = decide(IMAGE, rules, context())
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "deny",
        "explicit-rule",
        ("explicit",),
    )


def test_it_ranks_source_above_scope_d3():
    rules = [
        rule("d", "deny", source="product-default", scope=ROWAN),
        rule("u", "allow", scope=GLOBAL),
    ]
    assert decide(VOICE, rules, context()).rule_ids == ("u",)


@pytest.mark.parametrize(
    "narrow, wide",
    [(GREENHOUSE, CONVERSATION), (CONVERSATION, ROWAN), (ROWAN, GLOBAL)],
)
def test_it_lets_a_more_specific_scope_win_within_a_source_d3(narrow, wide):
    rules = [rule("wide", "deny", scope=wide), rule("narrow", "allow", scope=narrow)]
    decision = decide(VOICE, rules, context())
    assert (decision.effect, decision.rule_ids) == ("allow", ("narrow",))


def test_it_does_not_compare_versions_across_rules_d3():
    rules = [rule("a", "allow", version=7), rule("b", "deny", version=1)]
    decision = decide(VOICE, rules, context())
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "ask",
        "conflicting-rules",
        ("a", "b"),
    )


def test_it_asks_on_equally_authoritative_conflicting_rules_with_both_ids_sorted_d4():
    rules = [
        rule("zeta", "deny", capability="topic.work", scope=ROWAN),
        rule("alpha", "allow", capability="topic.work", scope=ROWAN),
    ]
    decision = decide(WORK, rules, context())
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "ask",
        "conflicting-rules",
        ("alpha", "zeta"),
    )


def test_it_lists_every_tied_rule_of_a_conflict_but_not_the_outranked_ones_d4():
    rules = [
        rule("b", "allow", scope=ROWAN),
        rule("a", "deny", scope=ROWAN),
        rule("c", "ask", scope=ROWAN),
        rule("low", "allow", source="confirmed-inference", scope=GREENHOUSE),
    ]
    assert decide(VOICE, rules, context()).rule_ids == ("a", "b", "c")


def test_it_decides_by_an_agreeing_top_tier_and_names_all_its_rules_d4():
    rules = [
        rule("b", "deny"),
        rule("a", "deny"),
        rule("low", "allow", source="confirmed-inference"),
    ]
    decision = decide(VOICE, rules, context())
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "deny",
        "explicit-rule",
        ("a", "b"),
    )


def test_it_treats_an_ask_rule_as_an_explicit_ask_d4():
    decision = decide(PLAYFUL, [rule("a", "ask", capability="tone.playful")], context())
    assert (decision.effect, decision.reason) == ("ask", "explicit-rule")


# ---------------------------------------------------------------------------------------------
# D5 revoked and expired


def test_it_ignores_a_revoked_permission_d5():
    revoked = rule("a", "allow", revoked_at=T0 - HOUR)
    decision = decide(VOICE, [revoked], context())
    assert (decision.effect, decision.reason) == ("ask", "no-applicable-rule")


def test_it_explains_revoked_apart_from_expired_d5():
    rules = [
        rule("rev", revoked_at=T0 - HOUR),
        rule("exp", valid_until=T0 - HOUR),
        rule("future", valid_from=T0 + HOUR),
    ]
    explanation = explain(VOICE, rules, context())
    assert explanation.reason_of("rev") == "revoked"
    assert explanation.reason_of("exp") == "expired"
    assert explanation.reason_of("future") == "not-yet-valid"


def test_it_explains_a_revoked_and_expired_rule_as_revoked_d5():
    both = rule("a", valid_until=T0 - HOUR, revoked_at=T0 - DAY)
    assert explain(VOICE, [both], context()).reason_of("a") == "revoked"


# ---------------------------------------------------------------------------------------------
# D6 order and duplicates


def test_it_decides_the_same_whatever_the_order_and_duplicates_d6():
    rules = [
        rule("a", "allow", scope=ROWAN),
        rule("b", "deny", source="confirmed-inference", scope=GREENHOUSE),
    ]
    first = decide(VOICE, rules, context())
    assert decide(VOICE, list(reversed(rules)), context()) == first
    assert decide(VOICE, rules + rules + [rules[0]], context()) == first


def test_it_gives_the_same_decision_for_duplicate_events_d6():
    event = rule("a", "allow")
    assert decide(VOICE, [event] * 5, context()) == decide(VOICE, [event], context())


def test_it_changes_nothing_when_a_rule_is_added_below_the_top_tier_d6():
    rules = [rule("top", "allow", scope=GREENHOUSE)]
    before = decide(VOICE, rules, context())
    after = decide(VOICE, rules + [rule("below", "deny", scope=CONVERSATION)], context())
    assert after == before


# ---------------------------------------------------------------------------------------------
# The seed's cases


def test_it_does_not_leak_a_character_rule_to_another_character():
    playful = rule("a", "allow", capability="tone.playful", scope=ROWAN)
    assert (
        decide(PLAYFUL, [playful], context(character="marlowe", conversation=OTHER_CONV)).effect
        == "ask"
    )
    assert decide(PLAYFUL, [playful], context()).effect == "allow"


def test_it_stops_applying_a_scene_rule_after_the_scene_ends():
    greenhouse = rule("a", "allow", capability="tone.playful", scope=GREENHOUSE)
    assert decide(PLAYFUL, [greenhouse], context(scene="greenhouse")).effect == "allow"
    assert decide(PLAYFUL, [greenhouse], context(scene="downstairs")).effect == "ask"
    assert decide(PLAYFUL, [greenhouse], context(scene=None)).effect == "ask"


def test_it_stops_applying_a_scene_rule_at_its_end_time():
    greenhouse = rule("a", "allow", scope=GREENHOUSE, valid_until=T0 + HOUR)
    assert decide(VOICE, [greenhouse], context(now=T0 + HOUR - MICRO)).effect == "allow"
    assert decide(VOICE, [greenhouse], context(now=T0 + HOUR)).effect == "ask"


# ---------------------------------------------------------------------------------------------
# explain


def test_it_explains_every_rule_with_a_reason():
    rules = [
        rule("cap", capability="media.image"),
        rule("scope", scope=MARLOWE),
        rule("requester", requested_by="automation"),
        rule("top-a", "allow", scope=GREENHOUSE),
        rule("top-b", "deny", scope=GREENHOUSE),
        rule("low", "allow", scope=ROWAN),
    ]
    explanation = explain(VOICE, rules, context())
    reasons = {item.rule_id: item.reason for item in explanation.rules}
    assert reasons == {
        "cap": "wrong-capability",
        "scope": "scope",
        "requester": "requester",
        "top-a": "tied",
        "top-b": "tied",
        "low": "outranked",
    }
    assert explanation.decision == decide(VOICE, rules, context())
    assert [item.rule_id for item in explanation.rules] == sorted(reasons)


def test_it_explains_the_deciding_rule_and_what_outranked_the_others():
    rules = [rule("win", "deny", scope=GREENHOUSE), rule("lose", "allow")]
    explanation = explain(VOICE, rules, context())
    assert explanation.reason_of("win") == "decided"
    lose = next(item for item in explanation.rules if item.rule_id == "lose")
    assert "win" in lose.detail


def test_it_explains_a_rule_of_another_user_as_such():
    explanation = explain(VOICE, [rule("a", user="someone-else")], context())
    assert explanation.rules[0].reason == "scope"
    assert "another user" in explanation.rules[0].detail


# ---------------------------------------------------------------------------------------------
# Context ids (D10) and job reasons (D9)


def test_it_builds_scope_ids_as_spec_section_1_says_and_round_trips_them():
    ctx = context(scene="roof:top")
    assert ctx.scope_ids == (
        "user:wren",
        "character:wren:rowan",
        f"conversation:{CONV}",
        f"scene:{CONV}:roof:top",
    )
    assert place_of_scope_ids(ctx.scope_ids) == {
        "character": "rowan",
        "conversation": CONV,
        "scene": "roof:top",
    }
    assert context(character=None, conversation=None, scene=None).scope_ids == ("user:wren",)


def test_it_joins_effect_and_reason_in_a_job_reason():
    assert job_reason(decide(VOICE, [], context())) == "ask:no-applicable-rule"


# ---------------------------------------------------------------------------------------------
# check_rules


def test_it_checks_and_reports_a_reachable_conflict():
    result = check_rules([rule("a", "allow", scope=ROWAN), rule("b", "deny", scope=ROWAN)], now=T0)
    assert [(c.rule_ids, c.effects) for c in result.conflicts] == [(("a", "b"), ("allow", "deny"))]


@pytest.mark.parametrize(
    "a, b",
    [
        (rule("a", "allow", scope=ROWAN), rule("b", "deny", scope=MARLOWE)),  # never both apply
        (rule("a", "allow", requested_by="user"), rule("b", "deny", requested_by="assistant")),
        (rule("a", "allow", valid_until=T0 + HOUR), rule("b", "deny", valid_from=T0 + HOUR)),
        (rule("a", "allow"), rule("b", "allow")),  # agree
        (rule("a", "allow", capability="media.image"), rule("b", "deny")),
    ],
)
def test_it_checks_and_does_not_report_rules_that_never_tie(a, b):
    assert check_rules([a, b], now=T0).conflicts == ()


def test_it_checks_and_does_not_report_a_conflict_a_higher_rule_always_hides():
    rules = [
        rule("a", "allow", source="confirmed-inference", scope=ROWAN),
        rule("b", "deny", source="confirmed-inference", scope=ROWAN),
        rule("top", "deny", scope=GLOBAL),
    ]
    result = check_rules(rules, now=T0)
    assert result.conflicts == ()
    assert {(d.rule_id, d.reason, d.by) for d in result.dead} == {
        ("a", "shadowed", "top"),
        ("b", "shadowed", "top"),
    }


def test_it_checks_and_reports_dead_rules_expired_revoked_and_shadowed():
    rules = [
        rule("expired", valid_until=T0 - HOUR),
        rule("revoked", revoked_at=T0 - HOUR),
        rule("stillborn", valid_from=T0 + HOUR, revoked_at=T0 + MICRO),
        rule("top", "deny", scope=CONVERSATION),
        rule("shadowed", "allow", source="confirmed-inference", scope=GREENHOUSE),
        rule(
            "partly",
            "allow",
            source="confirmed-inference",
            scope=GREENHOUSE,
            capability="media.image",
        ),
        rule("later", "deny", capability="media.image", valid_from=T0 + DAY),
    ]
    result = check_rules(rules, now=T0)
    assert {(d.rule_id, d.reason) for d in result.dead} == {
        ("expired", "expired"),
        ("revoked", "revoked"),
        ("stillborn", "revoked"),
        ("shadowed", "shadowed"),
    }
    assert not result.ok


def test_it_checks_knowing_a_character_rule_covers_that_characters_conversations():
    rules = [
        rule("char", "deny", scope=ROWAN),
        rule("conv", "allow", source="confirmed-inference", scope=CONVERSATION),
    ]
    assert check_rules(rules, now=T0).dead == ()
    result = check_rules(rules, now=T0, conversation_characters={CONV: "rowan"})
    assert [(d.rule_id, d.by) for d in result.dead] == [("conv", "char")]


def test_it_checks_a_narrower_requester_or_window_is_not_shadowed_by_a_partial_cover():
    rules = [
        rule("top", "deny", requested_by="user"),
        rule("low", "allow", source="confirmed-inference"),
        rule("top2", "deny", capability="media.image", valid_until=T0 + DAY),
        rule("low2", "allow", capability="media.image", source="confirmed-inference"),
    ]
    assert check_rules(rules, now=T0).dead == ()


def test_it_checks_a_clean_rule_set_as_ok():
    assert check_rules([rule("a"), rule("b", "deny", scope=ROWAN)], now=T0).ok
    assert check_rules([], now=T0).ok
