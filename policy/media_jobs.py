"""Media jobs (SPEC D9): a voice or image job is admitted by a decision made before it is
generated, started only while that decision still holds, and completed once; a replayed
admission with the same fingerprint answers the same job."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from config.clock import db_now
from config.errors import Conflict, IdempotencyKeyReused, NotFound, ValidationError
from conversations.selectors import LoadedContext

from .domain import (
    ADMISSION_STATUS,
    JOB_CANCELLED,
    JOB_DONE,
    JOB_NEEDS_CONFIRMATION,
    JOB_QUEUED,
    JOB_RUNNING,
    REQUESTERS,
    PolicyContext,
    is_media_capability,
    job_reason,
)
from .models import (
    MediaJob,
)
from .selectors import (
    as_uuid,
    capability_by_name,
)
from .services.decisions import (
    IDEMPOTENCY_KEY_MAX,
    decide_and_log,
    decide_in_context,
    require_choice,
)

# ---------------------------------------------------------------------------------------------
# Media jobs (D9)


def _request_of(job: MediaJob) -> tuple:
    """What makes two admissions one request (D9's idempotency): the capability, the requester
    and the place."""
    conversation_id = job.conversation_id
    return (
        job.capability_id,
        job.requested_by,
        job.character_id,
        str(conversation_id) if conversation_id else None,
        job.scene,
    )


def _replay_job(job: MediaJob, fingerprint: tuple) -> tuple[MediaJob, bool]:
    if _request_of(job) != fingerprint:
        raise IdempotencyKeyReused("This idempotency key was used for another media job.")
    return job, False


def media_job_admit(
    *, context: LoadedContext, capability: str, requested_by: str, idempotency_key: str
) -> tuple[MediaJob, bool]:
    """D9: admit a media job with the decision and policy version of this moment (allow →
    queued, ask → needs-confirmation, deny → rejected). The idempotency key is unique per user:
    the same request again returns the same job (`created` False); the same key for another
    request is a conflict. Returns (job, created)."""
    require_choice(requested_by, REQUESTERS, field="requested_by")
    if not isinstance(idempotency_key, str) or not 0 < len(idempotency_key) <= IDEMPOTENCY_KEY_MAX:
        raise ValidationError("An idempotency key of 1–255 characters.", field="idempotency_key")
    found = capability_by_name(capability)
    if not is_media_capability(found.name):
        raise ValidationError("Media jobs are only for media capabilities.", field="capability")
    user = context.user
    request = {
        "capability": found,
        "requested_by": requested_by,
        "character_id": context.character.pk if context.character else None,
        "conversation_id": context.conversation.pk if context.conversation else None,
        "scene": context.scene,
    }
    fingerprint = _request_of(MediaJob(**request))
    existing = MediaJob.objects.filter(user=user, idempotency_key=idempotency_key).first()
    if existing is not None:
        return _replay_job(existing, fingerprint)
    with transaction.atomic():
        outcome = decide_in_context(context, [found], requested_by=requested_by)[0]
        decision = outcome.decision
        job = MediaJob(
            user=user,
            idempotency_key=idempotency_key,
            **request,
            status=ADMISSION_STATUS[decision.effect],
            reason="" if decision.effect == "allow" else job_reason(decision),
            decision_id=outcome.decision_id,
            decision_effect=decision.effect,
            decision_reason=decision.reason,
            decision_rule_ids=list(decision.rule_ids),
            admission_defaults_version=outcome.policy_version.defaults,
            admission_user_version=outcome.policy_version.user,
            # One clock reading per request: the context's, unless it named a valid time.
            created_at=db_now() if context.now_given else context.now,
        )
        try:
            with transaction.atomic():
                job.save(force_insert=True)
        except IntegrityError:
            # A concurrent request with the same key won the insert: answer as a replay.
            existing = MediaJob.objects.filter(user=user, idempotency_key=idempotency_key).first()
            if existing is None:
                raise
            return _replay_job(existing, fingerprint)
        return job, True


def _locked_job(job_id) -> MediaJob:
    pk = as_uuid(job_id)
    job = MediaJob.objects.select_for_update().filter(pk=pk).first() if pk else None
    if job is None:
        raise NotFound("No such media job.")
    return job


def media_job_start(*, job_id) -> MediaJob:
    """D9: a worker asks to start a job. Under the job's row lock (concurrent starts start it
    once), the rules are reloaded and the capability decided again at the database clock (not
    a version compare: rules also expire). Allow → running; anything else → cancelled with the
    reason and both versions (a job allowed once is cancelled only by a deny). A job waiting
    for confirmation runs on allow, is cancelled on deny, and keeps waiting on ask. Any other
    status is returned as it is: start is idempotent."""
    with transaction.atomic():
        job = _locked_job(job_id)
        if job.status not in (JOB_QUEUED, JOB_NEEDS_CONFIRMATION):
            return job
        now = db_now()
        context = PolicyContext(
            user=job.user.username,
            now=now,
            character=job.character.slug if job.character_id else None,
            conversation=str(job.conversation_id) if job.conversation_id else None,
            scene=job.scene,
        )
        outcome = decide_and_log(
            user=job.user,
            context=context,
            character_id=job.character_id,
            conversation_id=job.conversation_id,
            capabilities=[job.capability],
            requested_by=job.requested_by,
        )[0]
        decision = outcome.decision
        if job.status == JOB_NEEDS_CONFIRMATION and decision.effect == "ask":
            return job  # still unanswered: nothing to start or cancel
        if job.status == JOB_QUEUED and job.allowed_once:
            runs = decision.effect != "deny"
        else:
            runs = decision.effect == "allow"
        job.start_decision_id = outcome.decision_id
        job.start_defaults_version = outcome.policy_version.defaults
        job.start_user_version = outcome.policy_version.user
        if runs:
            job.status, job.reason, job.started_at = JOB_RUNNING, "", now
        else:
            job.status, job.reason, job.finished_at = JOB_CANCELLED, job_reason(decision), now
        job.save(
            update_fields=[
                "status",
                "reason",
                "started_at",
                "finished_at",
                "start_decision_id",
                "start_defaults_version",
                "start_user_version",
            ]
        )
        return job


def media_job_complete(*, job_id) -> MediaJob:
    """D9: a running job is done; completing a done job again changes nothing. A job that
    never ran (queued, waiting, rejected, cancelled) cannot complete: a conflict."""
    with transaction.atomic():
        job = _locked_job(job_id)
        if job.status == JOB_DONE:
            return job
        if job.status != JOB_RUNNING:
            raise Conflict(f"A {job.status} media job cannot complete; only a running one can.")
        job.status, job.finished_at = JOB_DONE, db_now()
        job.save(update_fields=["status", "finished_at"])
        return job
