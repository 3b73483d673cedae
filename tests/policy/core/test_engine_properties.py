"""Property-based tests of the engine (SPEC §6), Cedar-style: a small brute-force reference
evaluator written here from the SPEC text is diffed against the engine on random rule sets,
and D6's properties are checked directly. No database."""

import dataclasses
import datetime as dt

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from policy.domain import DecisionRequest, PolicyContext, PolicyScope, Rule
from policy.engine import check_rules, decide, explain

from .rules import CONV, OTHER_CONV, T0

pytestmark = pytest.mark.slow

HOUR = dt.timedelta(hours=1)
PROPERTY = settings(max_examples=300, deadline=None, derandomize=True)

CAPABILITIES = ["media.voice", "tone.playful"]
USERS = ["wren", "ash"]
SCOPES = [
    PolicyScope("global"),
    PolicyScope("character", character="rowan"),
    PolicyScope("character", character="marlowe"),
    PolicyScope("conversation", conversation=CONV),
    PolicyScope("conversation", conversation=OTHER_CONV),
    PolicyScope("scene", conversation=CONV, scene="greenhouse"),
    PolicyScope("scene", conversation=CONV, scene="downstairs"),
    PolicyScope("scene", conversation=OTHER_CONV, scene="greenhouse"),
]
CONVERSATION_CHARACTERS = {CONV: "rowan", OTHER_CONV: "marlowe"}


# ---------------------------------------------------------------------------------------------
# The reference evaluator, from the words of SPEC §6 and nothing else.

SOURCE_ORDER = ["product-default", "confirmed-inference", "explicit-user"]  # "<" in the SPEC
SPECIFICITY = ["global", "character", "conversation", "scene"]  # "scene > conversation > …"


def reference_decide(request, rules, ctx):
    def scope_matches(rule):
        # "as R1; global matches the user, or everyone for a product default"
        if rule.user is not None and rule.user != ctx.user:
            return False
        kind = rule.scope.kind
        if kind == "global":
            return True
        if kind == "character":
            return ctx.character is not None and rule.scope.character == ctx.character
        if kind == "conversation":
            return ctx.conversation is not None and rule.scope.conversation == ctx.conversation
        return (
            ctx.conversation is not None
            and ctx.scene is not None
            and (rule.scope.conversation, rule.scope.scene) == (ctx.conversation, ctx.scene)
        )

    def in_force(rule):
        # "valid_from <= now < valid_until, not revoked at now (revoked_at null or later than now)"
        return (
            rule.valid_from <= ctx.now
            and (rule.valid_until is None or ctx.now < rule.valid_until)
            and (rule.revoked_at is None or rule.revoked_at > ctx.now)
        )

    def requester_ok(rule):
        return rule.requested_by is None or rule.requested_by == request.requested_by

    candidates = {
        rule.id: rule
        for rule in rules
        if rule.capability == request.capability
        and scope_matches(rule)
        and in_force(rule)
        and requester_ok(rule)
    }
    if not candidates:
        return ("ask", "no-applicable-rule", ())
    tier_of = {
        rid: (SOURCE_ORDER.index(r.source), SPECIFICITY.index(r.scope.kind))
        for rid, r in candidates.items()
    }
    top = max(tier_of.values())
    tied = sorted(rid for rid, tier in tier_of.items() if tier == top)
    effects = {candidates[rid].effect for rid in tied}
    if len(effects) > 1:
        return ("ask", "conflicting-rules", tuple(tied))
    return (effects.pop(), "explicit-rule", tuple(tied))


def as_tuple(decision):
    return (decision.effect, decision.reason, decision.rule_ids)


# ---------------------------------------------------------------------------------------------
# Strategies: small vocabularies and whole-hour times, so ties, boundaries and matches are common.

hours = st.integers(min_value=-3, max_value=3)


@st.composite
def rules_strategy(draw):
    source = draw(st.sampled_from(SOURCE_ORDER))
    if source == "product-default":
        user = None
        scope = draw(st.sampled_from(SCOPES[:3]))
    else:
        user = draw(st.sampled_from(USERS))
        scope = draw(st.sampled_from(SCOPES))
    start = draw(hours)
    until = draw(st.one_of(st.none(), st.integers(min_value=start + 1, max_value=4)))
    revoked = draw(st.one_of(st.none(), hours))
    return Rule(
        id="?",
        user=user,
        capability=draw(st.sampled_from(CAPABILITIES)),
        effect=draw(st.sampled_from(["allow", "deny", "ask"])),
        source=source,
        scope=scope,
        requested_by=draw(st.sampled_from([None, "user", "assistant", "automation"])),
        valid_from=T0 + start * HOUR,
        valid_until=None if until is None else T0 + until * HOUR,
        revoked_at=None if revoked is None else T0 + revoked * HOUR,
        version=draw(st.integers(min_value=1, max_value=3)),
    )


rule_sets = st.lists(rules_strategy(), max_size=9).map(
    lambda rules: [dataclasses.replace(rule, id=f"r{index}") for index, rule in enumerate(rules)]
)


@st.composite
def contexts(draw, consistent=False):
    conversation = draw(st.sampled_from([CONV, OTHER_CONV, None]))
    if consistent and conversation is not None:
        character = CONVERSATION_CHARACTERS[conversation]
    else:
        character = draw(st.sampled_from(["rowan", "marlowe", None]))
    scene = draw(st.sampled_from(["greenhouse", "downstairs", None])) if conversation else None
    return PolicyContext(
        user=draw(st.sampled_from(USERS)),
        now=T0 + draw(hours) * HOUR,
        character=character,
        conversation=conversation,
        scene=scene,
    )


requests = st.builds(
    DecisionRequest,
    capability=st.sampled_from(CAPABILITIES),
    requested_by=st.sampled_from(["user", "assistant", "automation"]),
)


# ---------------------------------------------------------------------------------------------
# Properties


@PROPERTY
@given(rule_sets, requests, contexts())
def test_it_agrees_with_the_reference_d1_to_d4(rules, request, ctx):
    assert as_tuple(decide(request, rules, ctx)) == reference_decide(request, rules, ctx)


@PROPERTY
@given(rule_sets, requests, contexts(), st.randoms(use_true_random=False), st.data())
def test_it_decides_the_same_whatever_the_order_and_duplicates_d6(rules, request, ctx, rnd, data):
    shuffled = (
        list(rules) + data.draw(st.lists(st.sampled_from(rules), max_size=5)) if rules else []
    )
    rnd.shuffle(shuffled)
    assert decide(request, shuffled, ctx) == decide(request, rules, ctx)


@PROPERTY
@given(rule_sets, requests, contexts())
def test_it_asks_with_no_applicable_rule_exactly_when_there_is_no_candidate_d2(rules, request, ctx):
    explanation = explain(request, rules, ctx)
    not_candidates = {
        "wrong-capability",
        "scope",
        "requester",
        "revoked",
        "expired",
        "not-yet-valid",
    }
    none_apply = all(item.reason in not_candidates for item in explanation.rules)
    decision = decide(request, rules, ctx)
    assert none_apply == (decision.reason == "no-applicable-rule")
    if none_apply:
        assert as_tuple(decision) == ("ask", "no-applicable-rule", ())


def _lower_tiers(top, ctx):
    """(source, scope) pairs strictly below `top` that a rule matching `ctx` can have."""
    scopes = {"global": PolicyScope("global")}
    if ctx.character:
        scopes["character"] = PolicyScope("character", character=ctx.character)
    if ctx.conversation:
        scopes["conversation"] = PolicyScope("conversation", conversation=ctx.conversation)
        if ctx.scene:
            scopes["scene"] = PolicyScope("scene", conversation=ctx.conversation, scene=ctx.scene)
    out = []
    for source in SOURCE_ORDER:
        for kind, scope in scopes.items():
            if source == "product-default" and kind not in ("global", "character"):
                continue
            if (SOURCE_ORDER.index(source), SPECIFICITY.index(kind)) < top:
                out.append((source, scope))
    return out


def _matching_rule(data, rule_id, request, ctx, tiers):
    source, scope = data.draw(st.sampled_from(tiers))
    return Rule(
        id=rule_id,
        user=None if source == "product-default" else ctx.user,
        capability=request.capability,
        effect=data.draw(st.sampled_from(["allow", "deny", "ask"])),
        source=source,
        scope=scope,
        requested_by=data.draw(st.sampled_from([None, request.requested_by])),
        valid_from=ctx.now - HOUR,
    )


@PROPERTY
@given(rule_sets, requests, contexts(), st.data())
def test_it_never_changes_the_decision_when_a_rule_is_added_below_the_top_tier_d6(
    rules, request, ctx, data
):
    # Make sure something applies, so there is a top tier to stay below.
    rules = rules + [_matching_rule(data, "m-top", request, ctx, _lower_tiers((9, 9), ctx))]
    decision = decide(request, rules, ctx)
    by_id = {rule.id: rule for rule in rules}
    top_rule = by_id[decision.rule_ids[0]]
    top = (SOURCE_ORDER.index(top_rule.source), SPECIFICITY.index(top_rule.scope.kind))
    lower = _lower_tiers(top, ctx)
    assume(lower)
    added = _matching_rule(
        data, data.draw(st.sampled_from(["r-new", "a-new", "z-new"])), request, ctx, lower
    )
    assert decide(request, rules + [added], ctx) == decision


def _lapsed(rule, now):
    return (rule.revoked_at is not None and rule.revoked_at <= now) or (
        rule.valid_until is not None and rule.valid_until <= now
    )


@PROPERTY
@given(rule_sets, requests, contexts())
def test_it_never_lets_revoked_or_expired_rules_determine_the_result_d5(rules, request, ctx):
    decision = decide(request, rules, ctx)
    by_id = {rule.id: rule for rule in rules}
    assert not any(_lapsed(by_id[rule_id], ctx.now) for rule_id in decision.rule_ids)
    alive = [rule for rule in rules if not _lapsed(rule, ctx.now)]
    assert decide(request, alive, ctx) == decision


@PROPERTY
@given(rule_sets, requests, contexts())
def test_it_explains_in_agreement_with_decide_covering_every_rule(rules, request, ctx):
    explanation = explain(request, rules, ctx)
    assert explanation.decision == decide(request, rules, ctx)
    assert sorted(item.rule_id for item in explanation.rules) == sorted(rule.id for rule in rules)
    in_tier = {item.rule_id for item in explanation.rules if item.reason in ("decided", "tied")}
    assert in_tier == set(explanation.decision.rule_ids)


@PROPERTY
@given(rule_sets, requests, contexts(consistent=True), st.booleans())
def test_it_checks_rules_soundly_dead_rules_never_decide_and_conflicts_are_reported(
    rules, request, ctx, mapped
):
    """Every context at or after the check's `now`: a rule reported dead is never among the
    determining rules, and a conflict D4 hits there was reported by the static check."""
    check_time = T0 - 3 * HOUR
    result = check_rules(
        rules, now=check_time, conversation_characters=CONVERSATION_CHARACTERS if mapped else None
    )
    decision = decide(request, rules, ctx)
    dead = {item.rule_id for item in result.dead}
    assert not dead & set(decision.rule_ids)
    if decision.reason == "conflicting-rules":
        reported = {pair for conflict in result.conflicts for pair in [conflict.rule_ids]}
        tied = set(decision.rule_ids)
        assert any(set(pair) <= tied for pair in reported)
