"""Policy writes (DESIGN habit 2): the only code that creates or changes rules, policy versions,
decision-log rows, answers and media jobs. Each service is one transaction, reads the database
clock once (SPEC §0) and leaves the meaning to the pure engine.

Lock order, everywhere: a policy-version row, then a rule row; a media-job row alone. Keeping
one order means two concurrent changes wait for each other instead of deadlocking.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Q

from config import catalog, metrics
from config.clock import db_now
from config.errors import Conflict, NotFound, ValidationError
from conversations.selectors import LoadedContext, character_by_slug, conversation_of_user
from events import outbox

from . import engine
from .domain import (
    ANSWERS,
    DEFAULT_SCOPE_KINDS,
    EFFECTS,
    EXPLICIT_USER,
    JOB_CANCELLED,
    JOB_NEEDS_CONFIRMATION,
    JOB_QUEUED,
    JOB_REASON_USER_DENIED,
    JOB_REJECTED,
    PRODUCT_DEFAULT,
    REMEMBER,
    REQUESTERS,
    SCOPE_KINDS,
    SOURCES,
    Decision,
    DecisionRequest,
    Explanation,
    PolicyContext,
    PolicyVersion,
    context_ids_from_scope_ids,
)
from .models import (
    Capability,
    DecisionLog,
    DefaultsPolicyVersion,
    MediaJob,
    PolicyAnswer,
    PolicyRule,
    UserPolicyVersion,
)
from .selectors import (
    as_uuid,
    capabilities_by_name,
    capability_by_name,
    decision_by_id,
    media_job_of_user,
    policy_version_of,
    product_defaults,
    rule_list,
    rules_for_decision,
    rules_for_explain,
    user_policy_version,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger("companion.policy")

KEEP: Any = object()  # rule_change: "leave this field as it was"

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


@dataclass(frozen=True)
class AnswerOutcome:
    """D8: what an answer did. `effect` is the answer, which now applies to the decision."""

    answer: PolicyAnswer
    rule: PolicyRule | None
    media_job: MediaJob | None
    policy_version: PolicyVersion
    replayed: bool

    @property
    def effect(self) -> str:
        return self.answer.answer


# ---------------------------------------------------------------------------------------------
# Helpers


def require_choice(value, choices, *, field: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value not in choices:
        raise ValidationError(f"Must be one of: {', '.join(choices)}.", field=field)


def policy_context(context: LoadedContext) -> PolicyContext:
    """The pure-core view of a loaded context: ids only, and its `now`."""
    return PolicyContext(
        user=context.user.username,
        now=context.now,
        character=context.character.slug if context.character else None,
        conversation=str(context.conversation.pk) if context.conversation else None,
        scene=context.scene,
    )


def _lock_policy_version(user) -> UserPolicyVersion | DefaultsPolicyVersion:
    """D7: the row that a user's (or, for `None`, the product defaults') version lives in,
    locked for the rest of the transaction: concurrent changes for one user queue here."""
    if user is None:
        model, lookup = DefaultsPolicyVersion, {"pk": 1}
    else:
        model, lookup = UserPolicyVersion, {"user": user}
    row = model.objects.select_for_update().filter(**lookup).first()
    if row is None:
        # The first change: create the row (get_or_create re-reads it if a concurrent
        # transaction created it first), then lock it like any other.
        model.objects.get_or_create(**lookup)
        row = model.objects.select_for_update().get(**lookup)
    return row


def _bump(row: UserPolicyVersion | DefaultsPolicyVersion, *, user, rules, at) -> int:
    """D7: strictly increasing, in the transaction of the change it counts. Returns the new
    version, which the services leave on the rule as `policy_version_after`. V1: the change's
    `policy.changed` event (the version and the rules it touched) in the same transaction."""
    row.version += 1
    row.save(update_fields=["version"])
    outbox.record(
        [
            outbox.policy_changed(
                user.username if user is not None else None,
                policy_version=row.version,
                rules=rules,
                at=at,
            )
        ]
    )
    return row.version


def decide_and_log(
    *,
    user,
    context: PolicyContext,
    character_id,
    conversation_id,
    capabilities: Sequence[Capability],
    requested_by: str,
    explain: bool = False,
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


# ---------------------------------------------------------------------------------------------
# Decisions


def decision_make(
    *, context: LoadedContext, capability: str, requested_by: str, explain: bool = False
) -> DecisionOutcome:
    """D1–D7, logged (D10). With `explain`, every rule of the user and every product default
    for the capability is loaded and explained; the decision is the same."""
    require_choice(requested_by, REQUESTERS, field="requested_by")
    found = capability_by_name(capability)
    with transaction.atomic():
        return decide_and_log(
            user=context.user,
            context=policy_context(context),
            character_id=context.character.pk if context.character else None,
            conversation_id=context.conversation.pk if context.conversation else None,
            capabilities=[found],
            requested_by=requested_by,
            explain=explain,
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
        return decide_and_log(
            user=context.user,
            context=policy_context(context),
            character_id=context.character.pk if context.character else None,
            conversation_id=context.conversation.pk if context.conversation else None,
            capabilities=[found[name] for name in dict.fromkeys(capabilities)],
            requested_by=requested_by,
        )


# ---------------------------------------------------------------------------------------------
# Rules


def _scope_rows(*, user, scope: Mapping) -> dict:
    """A scope dict ({"kind", "character"?, "conversation"?, "scene"?}) → the rule's columns,
    checked: the character exists, the conversation belongs to the rule's user, a product
    default is global or per character."""
    kind = scope.get("kind")
    require_choice(kind, SCOPE_KINDS, field="scope.kind")
    if user is None and kind not in DEFAULT_SCOPE_KINDS:
        raise ValidationError(
            "A product default has a global or character scope.", field="scope.kind"
        )
    needed = {
        "global": set(),
        "character": {"character"},
        "conversation": {"conversation"},
        "scene": {"conversation", "scene"},
    }[kind]
    for name in ("character", "conversation", "scene"):
        if name in needed and not scope.get(name):
            raise ValidationError(f"Required for a {kind} scope.", field=f"scope.{name}")
        if name not in needed and scope.get(name) is not None:
            raise ValidationError(f"Not allowed for a {kind} scope.", field=f"scope.{name}")
    rows: dict = {"scope_kind": kind, "character": None, "conversation": None, "scene": None}
    if kind == "character":
        rows["character"] = character_by_slug(scope["character"], field="scope.character")
    if kind in ("conversation", "scene"):
        rows["conversation"] = conversation_of_user(
            user, scope["conversation"], field="scope.conversation"
        )
    if kind == "scene":
        scene = scope["scene"]
        if not isinstance(scene, str) or len(scene) > 100 or "\x00" in scene:
            raise ValidationError("A scene id of 1–100 characters.", field="scope.scene")
        rows["scene"] = scene
    return rows


def _insert_rule(
    *,
    user,
    capability: Capability,
    effect: str,
    source: str,
    scope_rows: dict,
    requested_by: str | None,
    valid_from: datetime,
    valid_until: datetime | None,
    now: datetime,
    version: int = 1,
    supersedes: PolicyRule | None = None,
) -> PolicyRule:
    if valid_until is not None and valid_until <= valid_from:
        raise ValidationError("Must be later than valid_from.", field="valid_until")
    return PolicyRule.objects.create(
        user=user,
        capability=capability,
        effect=effect,
        source=source,
        requested_by=requested_by,
        valid_from=valid_from,
        valid_until=valid_until,
        version=version,
        supersedes=supersedes,
        created_at=now,
        **scope_rows,
    )


def rule_create(
    *,
    user: User | None,
    capability: str,
    effect: str,
    source: str,
    scope: Mapping,
    requested_by: str | None = None,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    replace: bool = False,
) -> PolicyRule:
    """A new rule, version 1 (SPEC §6), and D7's version bump in the same transaction. `user`
    None makes a product default: global or character scope, source `product-default` (and
    only a product default has that source). `valid_from` defaults to the database clock.

    D11 with `replace`: the user's choice replaces its place — every live `explicit-user` rule
    of `user` at the same capability and exact scope (kind and ids), whatever its
    `requested_by`, is revoked in the same transaction (`place_replace`). Without it a rule is
    added beside them."""
    with transaction.atomic():
        return _rule_create_at(
            now=None,
            user=user,
            capability=capability,
            effect=effect,
            source=source,
            scope=scope,
            requested_by=requested_by,
            valid_from=valid_from,
            valid_until=valid_until,
            replace=replace,
        )


def _live_at_place(*, user, capability: str, scope_rows: dict, now: datetime):
    """D11: the live (not revoked, not expired) `explicit-user` rules of `user` at one place —
    a capability and an exact scope, whatever their `requested_by` — locked."""
    return list(
        PolicyRule.objects.select_for_update()
        .filter(
            user=user,
            capability_id=capability,
            source=EXPLICIT_USER,
            scope_kind=scope_rows["scope_kind"],
            character=scope_rows["character"],
            conversation=scope_rows["conversation"],
            scene=scope_rows["scene"],
        )
        .filter(Q(revoked_at__isnull=True) | Q(revoked_at__gt=now))
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gt=now))
        .order_by("created_at", "id")
    )


def _rule_create_at(
    *,
    now: datetime | None,
    user,
    capability: str,
    effect: str,
    source: str,
    scope: Mapping,
    requested_by: str | None,
    valid_from: datetime | None,
    valid_until: datetime | None,
    replace: bool = False,
) -> PolicyRule:
    """rule_create inside the caller's transaction, at the caller's clock reading if it has one
    (SPEC §0: one reading per transaction). With `replace` (D11), the user's live explicit
    choices at the place are revoked at that reading, and the new rule succeeds the newest of
    them (its version + 1); one version bump for it all (D7)."""
    require_choice(effect, EFFECTS, field="effect")
    require_choice(source, SOURCES, field="source")
    require_choice(requested_by, REQUESTERS, field="requested_by", allow_none=True)
    if user is None and source != PRODUCT_DEFAULT:
        raise ValidationError("A rule without a user is a product default.", field="source")
    if user is not None and source == PRODUCT_DEFAULT:
        raise ValidationError(
            "A user's rule cannot have the product-default source.", field="source"
        )
    found = capability_by_name(capability)
    scope_rows = _scope_rows(user=user, scope=scope)
    version_row = _lock_policy_version(user)
    now = now or db_now()
    replaced = []
    if replace and user is not None:
        replaced = _live_at_place(user=user, capability=found.name, scope_rows=scope_rows, now=now)
        for old in replaced:
            old.revoked_at = now
            old.save(update_fields=["revoked_at"])
    newest = replaced[-1] if replaced else None
    rule = _insert_rule(
        user=user,
        capability=found,
        effect=effect,
        source=source,
        scope_rows=scope_rows,
        requested_by=requested_by,
        valid_from=valid_from or now,
        valid_until=valid_until,
        now=now,
        version=newest.version + 1 if newest else 1,
        supersedes=newest,
    )
    rule.policy_version_after = _bump(
        version_row, user=user, at=now, rules=[rule.pk, *(old.pk for old in replaced)]
    )
    rule.replaced = replaced
    return rule


def _locked_rule(rule_id, *, owner) -> tuple[PolicyRule, UserPolicyVersion | DefaultsPolicyVersion]:
    """The rule, locked after its owner's version row (the module's lock order). With `owner`,
    another user's rule or a product default is not found (DESIGN habit 5)."""
    pk = as_uuid(rule_id)
    head = PolicyRule.objects.select_related("user").filter(pk=pk).first() if pk else None
    if head is None or (owner is not None and head.user_id != owner.pk):
        raise NotFound("No such rule.")
    version_row = _lock_policy_version(head.user)
    rule = PolicyRule.objects.select_for_update().get(pk=pk)
    rule.user = head.user
    return rule, version_row


def rule_revoke(*, rule_id, owner: User | None = None) -> PolicyRule:
    """Revoke a rule at the database clock (D5: a decision, unlike expiry) and bump its owner's
    version (D7) in the same transaction. Revoking a revoked rule changes nothing and bumps
    nothing, so a retried revoke is harmless."""
    with transaction.atomic():
        rule, version_row = _locked_rule(rule_id, owner=owner)
        if rule.revoked_at is not None:
            rule.policy_version_after = version_row.version
            return rule
        rule.revoked_at = db_now()
        rule.save(update_fields=["revoked_at"])
        rule.policy_version_after = _bump(
            version_row, user=rule.user, rules=[rule.pk], at=rule.revoked_at
        )
        return rule


def rule_change(
    *,
    rule_id,
    owner: User | None = None,
    effect: str = KEEP,
    requested_by=KEEP,
    valid_from: datetime | None = KEEP,
    valid_until: datetime | None = KEEP,
    source: str = KEEP,
) -> PolicyRule:
    """SPEC §6: rules are immutable, so a change revokes the rule and creates its successor
    (same user, capability and scope; `version + 1`) in one transaction with one version bump
    (D7). A successor without a new `valid_from` starts when its predecessor is revoked.
    Changing a revoked rule is a conflict: its successor, if any, is the one to change."""
    if effect is not KEEP:
        require_choice(effect, EFFECTS, field="effect")
    if requested_by is not KEEP:
        require_choice(requested_by, REQUESTERS, field="requested_by", allow_none=True)
    if source is not KEEP:
        require_choice(source, SOURCES, field="source")
    with transaction.atomic():
        rule, version_row = _locked_rule(rule_id, owner=owner)
        if rule.revoked_at is not None:
            raise Conflict("This rule was revoked; change its successor instead.")
        new_source = rule.source if source is KEEP else source
        if (rule.user_id is None) != (new_source == PRODUCT_DEFAULT):
            raise ValidationError(
                "Only a product default has the product-default source.", field="source"
            )
        now = db_now()
        rule.revoked_at = now
        rule.save(update_fields=["revoked_at"])
        successor = _insert_rule(
            user=rule.user,
            capability=rule.capability,
            source=new_source,
            effect=rule.effect if effect is KEEP else effect,
            scope_rows={
                "scope_kind": rule.scope_kind,
                "character_id": rule.character_id,
                "conversation_id": rule.conversation_id,
                "scene": rule.scene,
            },
            requested_by=rule.requested_by if requested_by is KEEP else requested_by,
            valid_from=now if valid_from is KEEP or valid_from is None else valid_from,
            valid_until=rule.valid_until if valid_until is KEEP else valid_until,
            now=now,
            version=rule.version + 1,
            supersedes=rule,
        )
        successor.policy_version_after = _bump(
            version_row, user=rule.user, at=now, rules=[rule.pk, successor.pk]
        )
        return successor


# ---------------------------------------------------------------------------------------------
# Answers (D8)


def _answer_scope(remember: str, decision: DecisionLog) -> dict:
    """The scope of the rule an answer creates: the decision's own context, as wide as
    `remember` says. A scope the context does not have is bad input (D8: a scene answer
    without a scene → 400)."""
    ids = context_ids_from_scope_ids(decision.scope_ids)
    if remember == "global":
        return {"kind": "global"}
    if remember == "character":
        if not ids["character"]:
            raise ValidationError("The decision's context has no character.", field="remember")
        return {"kind": "character", "character": ids["character"]}
    if not ids["conversation"]:
        raise ValidationError("The decision's context has no conversation.", field="remember")
    if remember == "conversation":
        return {"kind": "conversation", "conversation": ids["conversation"]}
    if ids["scene"] is None:
        raise ValidationError("The decision's context has no scene.", field="remember")
    return {"kind": "scene", "conversation": ids["conversation"], "scene": ids["scene"]}


def _answer_job(job: MediaJob, answer: str, remember: str) -> bool:
    """D8 on a media job the answer names: allow → queued (once: it then runs unless the
    decision at start is deny); deny → rejected. An answer that the job's state already
    reflects changes nothing; one that contradicts a job already past it is a conflict.
    Returns whether the job changed."""
    once = remember == "once"
    if job.status == JOB_NEEDS_CONFIRMATION:
        if answer == "allow":
            job.status, job.reason, job.allowed_once = JOB_QUEUED, "", once
        else:
            job.status, job.reason = JOB_REJECTED, JOB_REASON_USER_DENIED
        return True
    if job.status == JOB_QUEUED and answer == "allow":
        if once and not job.allowed_once:
            job.allowed_once = True
            return True
        return False
    if job.status == JOB_QUEUED and answer == "deny":
        job.status, job.reason = JOB_CANCELLED, JOB_REASON_USER_DENIED
        return True
    if job.status in (JOB_REJECTED, JOB_CANCELLED) and answer == "deny":
        return False
    raise Conflict(f"The media job is already {job.status}.")


def decision_answer(*, decision_id, answer: str, remember: str, media_job_id=None) -> AnswerOutcome:
    """D8: the user's answer to an ASK. Anything but `once` creates an explicit-user rule for
    the decision's capability and requester at that scope of the decision's context (and bumps
    the user's version, D7); `once` applies to this decision only, and to the media job the
    answer names. One answer per decision: the same answer again is a replay, another one a
    conflict."""
    require_choice(answer, ANSWERS, field="answer")
    require_choice(remember, REMEMBER, field="remember")
    with transaction.atomic():
        decision = decision_by_id(decision_id)
        # Serialises answers to one decision (two taps on "yes").
        decision = DecisionLog.objects.select_for_update().get(pk=decision.pk)
        if decision.effect != "ask":
            raise ValidationError("Only an ask decision can be answered.", field="decision_id")
        job = None
        if media_job_id is not None:
            job = media_job_of_user(decision.user_id, media_job_id)
            if job.capability_id != decision.capability:
                raise ValidationError("The media job is for another capability.", field="media_job")
        previous = PolicyAnswer.objects.filter(decision=decision).first()
        if previous is not None:
            same = (previous.answer, previous.remember, previous.media_job_id) == (
                answer,
                remember,
                job.pk if job else None,
            )
            if not same:
                raise Conflict("This decision was already answered differently.")
            return AnswerOutcome(
                answer=previous,
                rule=previous.rule,
                media_job=previous.media_job,
                policy_version=policy_version_of(decision.user_id),
                replayed=True,
            )
        scope = _answer_scope(remember, decision) if remember != "once" else None
        if job is not None:
            job = MediaJob.objects.select_for_update().get(pk=job.pk)
            if _answer_job(job, answer, remember):
                job.save(update_fields=["status", "reason", "allowed_once"])
        now = db_now()
        rule = None
        if scope is not None:
            rule = _rule_create_at(
                now=now,
                user=decision.user,
                capability=decision.capability,
                effect=answer,
                source=EXPLICIT_USER,
                scope=scope,
                requested_by=decision.requested_by,
                valid_from=None,
                valid_until=None,
                replace=True,  # D11
            )
        saved = PolicyAnswer.objects.create(
            user_id=decision.user_id,
            decision=decision,
            answer=answer,
            remember=remember,
            rule=rule,
            media_job=job,
            answered_at=now,
        )
        return AnswerOutcome(
            answer=saved,
            rule=rule,
            media_job=job,
            policy_version=policy_version_of(decision.user_id),
            replayed=False,
        )


# ---------------------------------------------------------------------------------------------
# The boundaries page's choice


def boundary_set(*, user, capability: str, effect: str, scope: dict) -> str:
    """Make the user's own choice for one capability at one place exactly `effect` (D11).

    Every live `explicit-user` rule of the user at that place (capability and exact scope),
    whatever its `requested_by`, is revoked and the new choice created in one transaction, so
    it never ties with an older choice (D4 `conflicting-rules`). When the only live choice
    there already is this one, for every requester, nothing changes. Returns `created`,
    `changed` or `unchanged`."""
    with transaction.atomic():
        now = db_now()
        same = [
            rule
            for rule in rule_list(user=user, capability=capability)
            if rule.source == EXPLICIT_USER
            and rule.scope.as_dict() == scope
            and (rule.revoked_at is None or rule.revoked_at > now)
            and (rule.valid_until is None or rule.valid_until > now)
        ]
        if len(same) == 1 and same[0].effect == effect and same[0].requested_by is None:
            return "unchanged"
        _rule_create_at(
            now=now,
            user=user,
            capability=capability,
            effect=effect,
            source=EXPLICIT_USER,
            scope=scope,
            requested_by=None,
            valid_from=None,
            valid_until=None,
            replace=True,
        )
        return "changed" if same else "created"
