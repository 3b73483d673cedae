"""D8: the user's answer to an ASK — a rule at the scope the answer remembers (or this decision
only, `once`), and the media job it names queued or rejected; one answer per decision."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from config.clock import db_now
from config.errors import Conflict, ValidationError
from conversations.scopes import place_of_scope_ids

from ..domain import (
    ANSWERS,
    EXPLICIT_USER,
    JOB_CANCELLED,
    JOB_NEEDS_CONFIRMATION,
    JOB_QUEUED,
    JOB_REASON_USER_DENIED,
    JOB_REJECTED,
    REMEMBER,
    PolicyVersion,
)
from ..models import DecisionLog, MediaJob, PolicyAnswer, PolicyRule
from ..selectors import decision_by_id, media_job_of_user, policy_version_of
from .decisions import require_choice
from .rules import rule_create_at


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
# Answers (D8)


def _answer_scope(remember: str, decision: DecisionLog) -> dict:
    """The scope of the rule an answer creates: the decision's own context, as wide as
    `remember` says. A scope the context does not have is bad input (D8: a scene answer
    without a scene → 400)."""
    ids = place_of_scope_ids(decision.scope_ids)
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
            rule = rule_create_at(
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
