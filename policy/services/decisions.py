"""Decisions (SPEC §6, D1–D7), logged (D10): one capability or several at once in a constant
number of queries, for the decisions API, the prompt plan's `policy` and media jobs (D9). The
pure engine decides; this module reads the version and the rules and writes the log."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from config import catalog, metrics
from config.errors import ValidationError
from conversations.selectors import LoadedContext

from .. import engine
from ..domain import (
    REQUESTERS,
    Decision,
    DecisionRequest,
    Explanation,
    PolicyContext,
    PolicyVersion,
)
from ..models import Capability, DecisionLog
from ..selectors import (
    capabilities_by_name,
    capability_by_name,
    policy_version_of,
    product_defaults,
    rules_for_decision,
    rules_for_explain,
    user_policy_version,
)

log = logging.getLogger("companion.policy")


IDEMPOTENCY_KEY_MAX = 255


@dataclass(frozen=True)
class DecisionOutcome:
    """A logged decision (D10) as the API and the planner return it."""

    decision_id: str
    capability: str
    decision: Decision
    policy_version: PolicyVersion
    question: str
    explanation: Explanation | None = None


# ---------------------------------------------------------------------------------------------
# Helpers


def require_choice(value, choices, *, field: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value not in choices:
        raise ValidationError(f"Must be one of: {', '.join(choices)}.", field=field)


def decide_and_log(
    *,
    user,
    context: PolicyContext,
    character_id,
    conversation_id,
    capabilities: Sequence[Capability],
    requested_by: str,
    explain: bool = False,
    requester: str = "",
) -> list[DecisionOutcome]:
    """D1–D7 and D10 for one or more capabilities in a constant number of queries: the policy
    version, the rules, one insert into the decision log.

    The version is read before the rules, so a change committed in between makes the returned
    version older than the rules, never newer: a worker comparing versions (D9) then re-checks
    instead of trusting a decision made on older rules."""
    defaults = None
    if catalog.active():
        # In a request the product defaults and their version come from the process cache
        # (config.catalog), read together, so the version still never runs ahead of the rules.
        defaults = product_defaults()
        version = PolicyVersion(defaults=defaults.version, user=user_policy_version(user))
    else:
        version = policy_version_of(user)
    if explain:
        rules = [
            r
            for c in capabilities
            for r in rules_for_explain(user=user, capability=c.name, defaults=defaults)
        ]
    else:
        rules = rules_for_decision(
            user=user,
            capabilities=[c.name for c in capabilities],
            character_id=character_id,
            conversation_id=conversation_id,
            scene=context.scene,
            now=context.now,
            defaults=defaults,
        )
    outcomes: list[DecisionOutcome] = []
    rows: list[DecisionLog] = []
    for capability in capabilities:
        request = DecisionRequest(capability=capability.name, requested_by=requested_by)
        explanation = engine.explain(request, rules, context) if explain else None
        decision = explanation.decision if explanation else engine.decide(request, rules, context)
        row = DecisionLog(
            user=user,
            capability=capability.name,
            requested_by=requested_by,
            effect=decision.effect,
            reason=decision.reason,
            rule_ids=list(decision.rule_ids),
            defaults_version=version.defaults,
            user_version=version.user,
            scope_ids=list(context.scope_ids),
            decided_at=context.now,
            requester=requester,
        )
        rows.append(row)
        outcomes.append(
            DecisionOutcome(
                decision_id=str(row.pk),
                capability=capability.name,
                decision=decision,
                policy_version=version,
                question=capability.question,
                explanation=explanation,
            )
        )
        log_decision(
            decision_id=row.pk,
            capability=capability.name,
            requested_by=requested_by,
            decision=decision,
            rules_loaded=len(rules),
            version=(version.defaults, version.user),
        )
    DecisionLog.objects.bulk_create(rows)
    return outcomes


def log_decision(
    *,
    decision_id,
    capability: str,
    requested_by: str,
    decision,
    rules_loaded: int,
    version: tuple[int, int],
) -> None:
    """SPEC §12, D10: one line of ids, codes and versions per decision; never text."""
    log.info(
        "policy_decision decision=%s capability=%s requested_by=%s effect=%s reason=%s "
        "rule_ids=%s rules_loaded=%d policy_version=%d/%d",
        decision_id,
        capability,
        requested_by,
        decision.effect,
        decision.reason,
        ",".join(decision.rule_ids) or "-",
        rules_loaded,
        version[0],
        version[1],
    )
    metrics.decision_made(decision.effect, decision.reason)


def decide_in_context(
    context: LoadedContext, capabilities: Sequence[Capability], *, requested_by: str, **options
) -> list[DecisionOutcome]:
    """`decide_and_log` at the place and time of a loaded context: its user, character,
    conversation, scene and `now`."""
    return decide_and_log(
        user=context.user,
        context=PolicyContext.of(context.domain),
        character_id=context.character.pk if context.character else None,
        conversation_id=context.conversation.pk if context.conversation else None,
        capabilities=capabilities,
        requested_by=requested_by,
        **options,
    )


# ---------------------------------------------------------------------------------------------
# Decisions


def decision_make(
    *,
    context: LoadedContext,
    capability: str,
    requested_by: str,
    explain: bool = False,
    requester: str = "",
) -> DecisionOutcome:
    """D1–D7, logged (D10). With `explain`, every rule of the user and every product default
    for the capability is loaded and explained; the decision is the same. `requester` names
    who asked in the log (`connection:<id>` for an MCP connection, §15 M3)."""
    require_choice(requested_by, REQUESTERS, field="requested_by")
    found = capability_by_name(capability)
    with transaction.atomic():
        return decide_in_context(
            context, [found], requested_by=requested_by, explain=explain, requester=requester
        )[0]


def decisions_make(
    *, context: LoadedContext, capabilities: Sequence[str], requested_by: str = "assistant"
) -> list[DecisionOutcome]:
    """D1–D7 for several capabilities at once (the prompt plan's `policy`), in the same number
    of queries as one: one version read, one rule query, one insert into the log."""
    require_choice(requested_by, REQUESTERS, field="requested_by")
    found = capabilities_by_name(capabilities)
    if not found:
        return []
    with transaction.atomic():
        return decide_in_context(
            context,
            [found[name] for name in dict.fromkeys(capabilities)],
            requested_by=requested_by,
        )
