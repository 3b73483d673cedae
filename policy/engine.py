"""The boundary-policy engine (SPEC §6, D1–D6). Pure and standard library only: the same rules,
request and context give the same decision on every worker, whatever order the rules come in.

- `decide(request, rules, context)`: D1 candidates → D2 nothing applies → D3 rank → D4 top tier.
- `explain(request, rules, context)`: the decision plus, for every rule, why it was or was not
  a candidate and where a candidate ranked.
- `check_rules(rules, now=…)`: a static check over a rule set (one user's rules and the product
  defaults): conflicts that some reachable context would hit, and rules that can never decide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from .domain import (
    DEAD_EXPIRED,
    DEAD_REVOKED,
    DEAD_SHADOWED,
    REASON_CONFLICTING_RULES,
    REASON_EXPLICIT_RULE,
    REASON_NO_APPLICABLE_RULE,
    WHY_DECIDED,
    WHY_EXPIRED,
    WHY_NOT_YET_VALID,
    WHY_OUTRANKED,
    WHY_REQUESTER,
    WHY_REVOKED,
    WHY_SCOPE,
    WHY_TIED,
    WHY_WRONG_CAPABILITY,
    DeadRule,
    Decision,
    DecisionRequest,
    Explanation,
    PolicyContext,
    PolicyScope,
    Rule,
    RuleCheck,
    RuleConflict,
    RuleExplanation,
)


def unique_rules(rules: Iterable[Rule]) -> list[Rule]:
    """D6: a rule seen twice counts once. Rules are immutable, so one id has one content; if a
    caller still passes two contents under one id, the choice between them must not depend on
    their order either, so the smaller representation wins."""
    by_id: dict[str, Rule] = {}
    for rule in rules:
        seen = by_id.get(rule.id)
        if seen is None or repr(rule) < repr(seen):
            by_id[rule.id] = rule
    return list(by_id.values())


def rank_key(rule: Rule) -> tuple:
    """D3: source, then scope specificity (both descending), then id for a stable order only."""
    source_rank, scope_rank = rule.tier
    return (-source_rank, -scope_rank, rule.id)


def exclusion(request: DecisionRequest, rule: Rule, context: PolicyContext) -> str | None:
    """D1/D5: why `rule` is not a candidate, or None when it is."""
    if rule.capability != request.capability:
        return WHY_WRONG_CAPABILITY
    if not context.matches(rule):
        return WHY_SCOPE
    if rule.requested_by is not None and rule.requested_by != request.requested_by:
        return WHY_REQUESTER
    return rule.lapse(context.now)


def candidates(
    request: DecisionRequest, rules: Iterable[Rule], context: PolicyContext
) -> list[Rule]:
    """D1 candidates in D3 order."""
    found = [rule for rule in unique_rules(rules) if exclusion(request, rule, context) is None]
    return sorted(found, key=rank_key)


def _top_tier(ranked: list[Rule]) -> list[Rule]:
    """D4: every candidate equal to the first in source and scope kind."""
    return [rule for rule in ranked if rule.tier == ranked[0].tier]


def _decision(ranked: list[Rule]) -> Decision:
    if not ranked:
        return Decision("ask", REASON_NO_APPLICABLE_RULE, ())  # D2
    tier = _top_tier(ranked)
    ids = tuple(sorted(rule.id for rule in tier))
    if len({rule.effect for rule in tier}) > 1:
        return Decision("ask", REASON_CONFLICTING_RULES, ids)  # D4: never pick the permissive one
    # D4: the top rule's effect. Every rule of an agreeing top tier is named: revoking one of
    # them alone would not change the decision, and the user should see that.
    return Decision(ranked[0].effect, REASON_EXPLICIT_RULE, ids)


def decide(request: DecisionRequest, rules: Iterable[Rule], context: PolicyContext) -> Decision:
    """D1–D6: allow, deny or ask, with a stable reason code and the determining rule ids."""
    return _decision(candidates(request, rules, context))


def _tier_label(rule: Rule) -> str:
    return f"{rule.source}, {rule.scope.kind}"


def _when(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else "-"


def _scope_detail(request: DecisionRequest, rule: Rule, context: PolicyContext) -> str:
    if rule.user is not None and rule.user != context.user:
        return "rule belongs to another user"
    return f"{rule.scope.label()} does not cover this context"


# D1/D5: what each reason a rule is not a candidate tells about that rule (revoked and expired
# told apart).
_EXCLUDED = {
    WHY_WRONG_CAPABILITY: lambda request, rule, context: (
        f"rule is about {rule.capability}, not {request.capability}"
    ),
    WHY_SCOPE: _scope_detail,
    WHY_REQUESTER: lambda request, rule, context: (
        f"rule applies only to requests by {rule.requested_by}"
    ),
    WHY_REVOKED: lambda request, rule, context: f"revoked at {_when(rule.revoked_at)}",
    WHY_EXPIRED: lambda request, rule, context: f"valid until {_when(rule.valid_until)}, not after",
    WHY_NOT_YET_VALID: lambda request, rule, context: f"valid from {_when(rule.valid_from)}",
}


def _ranked(rule: Rule, decision: Decision, top: Rule) -> tuple[str, str]:
    """D3/D4: where a candidate ranked: below the top tier, tied in a conflicting top tier, or
    in the top tier that decided."""
    if rule.id not in decision.rule_ids:
        return WHY_OUTRANKED, f"outranked by {top.id} ({_tier_label(top)} over {_tier_label(rule)})"
    if decision.reason == REASON_CONFLICTING_RULES:
        others = ", ".join(i for i in decision.rule_ids if i != rule.id)
        return WHY_TIED, f"tied at {_tier_label(rule)} with {others}; their effects differ"
    return WHY_DECIDED, f"top tier ({_tier_label(rule)}): {rule.effect}"


def explain(request: DecisionRequest, rules: Iterable[Rule], context: PolicyContext) -> Explanation:
    """The decision and, for every rule (once, in id order), why it was or was not a candidate
    (D1, D5: revoked and expired are told apart) or how it ranked (D3, D4)."""
    unique = sorted(unique_rules(rules), key=lambda rule: rule.id)
    ranked = sorted((r for r in unique if exclusion(request, r, context) is None), key=rank_key)
    decision = _decision(ranked)
    top = ranked[0] if ranked else None
    items = []
    for rule in unique:
        why = exclusion(request, rule, context)
        describe = _EXCLUDED.get(why)
        if describe is not None:
            detail = describe(request, rule, context)
        else:
            why, detail = _ranked(rule, decision, top)
        items.append(RuleExplanation(rule.id, why, detail))
    return Explanation(decision=decision, rules=tuple(items))


# ---------------------------------------------------------------------------------------------
# Static check


class _Region:
    """The contexts and times in which a rule (or two rules at once) is a candidate: one user
    (None = every user), one scope, one requester (None = any) and a time window."""

    __slots__ = ("capability", "user", "scope", "requested_by", "start", "end")

    def __init__(self, capability, user, scope, requested_by, start, end):
        self.capability = capability
        self.user = user
        self.scope = scope
        self.requested_by = requested_by
        self.start = start
        self.end = end

    @property
    def empty(self) -> bool:
        return self.end is not None and self.end <= self.start


def _region(rule: Rule, now: datetime) -> _Region:
    return _Region(
        rule.capability,
        rule.user,
        rule.scope,
        rule.requested_by,
        max(rule.valid_from, now),
        rule.ends_at,
    )


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _overlap(a: Rule, b: Rule, now: datetime) -> _Region | None:
    """Where two rules of one tier are both candidates (same scope kind, so equal scopes)."""
    if a.capability != b.capability or a.scope != b.scope:
        return None
    if a.user is not None and b.user is not None and a.user != b.user:
        return None
    if (
        a.requested_by is not None
        and b.requested_by is not None
        and a.requested_by != b.requested_by
    ):
        return None
    region = _Region(
        a.capability,
        a.user if a.user is not None else b.user,
        a.scope,
        a.requested_by if a.requested_by is not None else b.requested_by,
        max(a.valid_from, b.valid_from, now),
        _earliest(a.ends_at, b.ends_at),
    )
    return None if region.empty else region


def _scope_covers(outer: PolicyScope, inner: PolicyScope, conversation_characters: Mapping) -> bool:
    if outer.kind == "global":
        return True
    if outer.kind == "character":
        if inner.kind == "character":
            return inner.character == outer.character
        if inner.kind in ("conversation", "scene"):
            return conversation_characters.get(inner.conversation) == outer.character
        return False
    if outer.kind == "conversation":
        return inner.kind in ("conversation", "scene") and inner.conversation == outer.conversation
    return inner.kind == "scene" and (inner.conversation, inner.scene) == (
        outer.conversation,
        outer.scene,
    )


def _covers(rule: Rule, region: _Region, conversation_characters: Mapping) -> bool:
    """Is `rule` a candidate everywhere and at every time in `region`?"""
    if rule.capability != region.capability:
        return False
    if rule.user is not None and rule.user != region.user:
        return False
    if rule.requested_by is not None and rule.requested_by != region.requested_by:
        return False
    if not _scope_covers(rule.scope, region.scope, conversation_characters):
        return False
    if rule.valid_from > region.start:
        return False
    ends = rule.ends_at
    return ends is None or (region.end is not None and ends >= region.end)


def _outranked_everywhere(
    region: _Region, tier: tuple[int, int], live: list[Rule], conversation_characters: Mapping
) -> Rule | None:
    """A rule of a strictly higher tier that covers the whole region (the first in D3 order)."""
    for other in live:  # already in D3 order
        if other.tier > tier and _covers(other, region, conversation_characters):
            return other
    return None


def _lapsed(rule: Rule, now: datetime) -> DeadRule | None:
    """D5: a rule that can never be a candidate again from `now` on: revoked, expired, or not
    yet valid but revoked or expiring before it starts. None while it can still decide."""
    lapse = rule.lapse(now)
    if lapse == WHY_REVOKED:
        return DeadRule(rule.id, DEAD_REVOKED)
    if lapse == WHY_EXPIRED:
        return DeadRule(rule.id, DEAD_EXPIRED)
    if _region(rule, now).empty:
        ends_by_revocation = rule.revoked_at is not None and rule.revoked_at == rule.ends_at
        return DeadRule(rule.id, DEAD_REVOKED if ends_by_revocation else DEAD_EXPIRED)
    return None


def _conflicts(
    reachable: list[Rule], live: list[Rule], now: datetime, conv_chars: Mapping
) -> list[RuleConflict]:
    """D4: pairs of reachable rules of one tier with different effects that are both
    candidates somewhere from `now` on where no single higher rule covers them."""
    conflicts: list[RuleConflict] = []
    for index, a in enumerate(reachable):
        for b in reachable[index + 1 :]:
            if a.tier != b.tier or a.effect == b.effect:
                continue
            region = _overlap(a, b, now)
            if region is None or _outranked_everywhere(region, a.tier, live, conv_chars):
                continue
            pair = sorted([a, b], key=lambda rule: rule.id)
            conflicts.append(
                RuleConflict(
                    capability=a.capability,
                    rule_ids=tuple(rule.id for rule in pair),
                    effects=tuple(rule.effect for rule in pair),
                )
            )
    return conflicts


def check_rules(
    rules: Iterable[Rule],
    *,
    now: datetime,
    conversation_characters: Mapping[str, str] | None = None,
) -> RuleCheck:
    """A static check of a rule set from `now` on (pages and admin use it).

    - dead: rules that can never decide again: revoked, expired (or revoked before they start),
      or shadowed — a rule of a strictly higher tier applies wherever and whenever this one
      does, so this one is never in the top tier (D4).
    - conflicts: pairs of equally ranked rules with different effects that are both candidates
      in some context and time from `now` on where no higher rule covers them: D4 would ask
      `conflicting-rules` there.

    `conversation_characters` maps a conversation id to its character slug, so a character
    rule is known to cover that conversation's rules. Only single covering rules are
    considered: a region covered only by several higher rules together is still reported,
    which errs towards telling about a conflict that cannot happen."""
    conv_chars = dict(conversation_characters or {})
    dead: list[DeadRule] = []
    live: list[Rule] = []
    for rule in sorted(unique_rules(rules), key=rank_key):
        lapsed = _lapsed(rule, now)
        if lapsed is not None:
            dead.append(lapsed)
        else:
            live.append(rule)
    reachable: list[Rule] = []
    for rule in live:
        shadow = _outranked_everywhere(_region(rule, now), rule.tier, live, conv_chars)
        if shadow is not None:
            dead.append(DeadRule(rule.id, DEAD_SHADOWED, by=shadow.id))
        else:
            reachable.append(rule)
    conflicts = _conflicts(reachable, live, now, conv_chars)
    return RuleCheck(
        conflicts=tuple(sorted(conflicts, key=lambda c: (c.capability, c.rule_ids))),
        dead=tuple(sorted(dead, key=lambda d: d.rule_id)),
    )
