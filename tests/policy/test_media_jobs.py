"""Media jobs (SPEC §6 D9, with D8's answers that move them): admitted with their decision
and version, started and completed once, cancelled when the rules changed since admission."""

import pytest

from config.errors import Conflict, IdempotencyKeyReused, NotFound, ValidationError
from policy import media_jobs, services
from policy.models import DecisionLog, MediaJob
from tests.factories import at
from tests.policy.helpers import admit, allow_voice, ask_voice

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "effect, status", [("allow", "queued"), ("ask", "needs-confirmation"), ("deny", "rejected")]
)
def test_it_admits_a_job_with_the_decision_and_version_d9(
    wren, conversation, context_of, effect, status
):
    allow_voice(wren, effect=effect)
    job, created = admit(conversation, context_of)
    assert created and job.status == status
    assert job.decision_effect == effect
    assert job.policy_version_at_admission.as_dict() == {"defaults": 0, "user": 1}
    assert DecisionLog.objects.filter(pk=job.decision_id).exists()


def test_it_returns_the_same_job_for_the_same_key_and_refuses_another_request_d9(
    conversation, context_of
):
    job, _ = admit(conversation, context_of)
    again, created = admit(conversation, context_of)
    assert (again.pk, created) == (job.pk, False)
    with pytest.raises(IdempotencyKeyReused):
        admit(conversation, context_of, capability="media.image")
    assert MediaJob.objects.count() == 1


def test_it_admits_media_jobs_for_media_capabilities_only_d9(conversation, context_of):
    with pytest.raises(ValidationError) as caught:
        admit(conversation, context_of, capability="tone.playful")
    assert "capability" in caught.value.errors


def test_it_starts_and_completes_an_allowed_job_idempotently_d9(
    wren, conversation, context_of, clock
):
    allow_voice(wren)
    job, _ = admit(conversation, context_of)
    clock.advance(minutes=1)
    started = media_jobs.media_job_start(job_id=job.pk)
    assert (started.status, started.started_at) == ("running", clock.now)
    assert started.policy_version_at_start.as_dict() == {"defaults": 0, "user": 1}
    clock.advance(minutes=1)
    assert media_jobs.media_job_start(job_id=job.pk).started_at == at("2026-08-05T12:01")
    done = media_jobs.media_job_complete(job_id=job.pk)
    assert done.status == "done"
    assert media_jobs.media_job_complete(job_id=job.pk).finished_at == done.finished_at
    assert media_jobs.media_job_start(job_id=job.pk).status == "done"


def test_it_cancels_a_stale_job_whose_rule_was_revoked_after_admission_d9(
    wren, conversation, context_of, clock
):
    rule = allow_voice(wren)
    job, _ = admit(conversation, context_of)
    clock.advance(minutes=1)
    services.rule_revoke(rule_id=rule.pk)
    started = media_jobs.media_job_start(job_id=job.pk)
    assert (started.status, started.reason) == ("cancelled", "ask:no-applicable-rule")
    assert started.policy_version_at_admission.as_dict() == {"defaults": 0, "user": 1}
    assert started.policy_version_at_start.as_dict() == {"defaults": 0, "user": 2}
    assert media_jobs.media_job_start(job_id=job.pk).status == "cancelled"


def test_it_also_cancels_a_job_whose_rule_expired_between_admission_and_start_d9(
    wren, conversation, context_of, clock
):
    allow_voice(wren, valid_until=at("2026-08-05T12:30"))
    job, _ = admit(conversation, context_of)
    assert job.status == "queued"
    clock.advance(minutes=30)  # valid until T is not applied at T
    started = media_jobs.media_job_start(job_id=job.pk)
    assert (started.status, started.reason) == ("cancelled", "ask:no-applicable-rule")
    # Nothing changed the versions: only deciding again could see the expiry.
    assert started.policy_version_at_start == started.policy_version_at_admission


def test_it_replays_a_retry_after_a_rule_change_then_cancels_it_at_start(
    wren, conversation, context_of, clock
):
    rule = allow_voice(wren)
    job, _ = admit(conversation, context_of)
    clock.advance(minutes=1)
    services.rule_change(rule_id=rule.pk, effect="deny")
    retried, created = admit(conversation, context_of)  # the runtime retries its request
    assert (retried.pk, created, retried.status) == (job.pk, False, "queued")
    started = media_jobs.media_job_start(job_id=job.pk)
    assert (started.status, started.reason) == ("cancelled", "deny:explicit-rule")
    fresh, created = admit(conversation, context_of, key="job-2")
    assert (created, fresh.status) == (True, "rejected")


def test_it_lets_a_job_run_on_an_allow_once_answer_unless_the_start_denies_d8_d9(
    wren, conversation, context_of
):
    job, _ = admit(conversation, context_of)
    assert job.status == "needs-confirmation"
    outcome = services.decision_answer(
        decision_id=job.decision_id, answer="allow", remember="once", media_job_id=job.pk
    )
    assert (outcome.media_job.status, outcome.media_job.allowed_once) == ("queued", True)
    # Still no rule: the start decision is ask, which does not stop a job allowed once.
    assert media_jobs.media_job_start(job_id=job.pk).status == "running"

    other, _ = admit(conversation, context_of, key="job-2")
    services.decision_answer(
        decision_id=other.decision_id, answer="allow", remember="once", media_job_id=other.pk
    )
    allow_voice(wren, effect="deny")
    started = media_jobs.media_job_start(job_id=other.pk)
    assert (started.status, started.reason) == ("cancelled", "deny:explicit-rule")


def test_it_rejects_the_job_a_deny_answer_names_d8(conversation, context_of):
    job, _ = admit(conversation, context_of)
    outcome = services.decision_answer(
        decision_id=job.decision_id, answer="deny", remember="once", media_job_id=job.pk
    )
    assert (outcome.media_job.status, outcome.media_job.reason) == ("rejected", "user-denied")


def test_it_lets_no_answer_move_a_job_that_already_ran_d8(wren, conversation, context_of):
    job, _ = admit(conversation, context_of)
    services.decision_answer(
        decision_id=job.decision_id, answer="allow", remember="once", media_job_id=job.pk
    )
    media_jobs.media_job_start(job_id=job.pk)
    later = ask_voice(conversation, context_of)
    with pytest.raises(Conflict):
        services.decision_answer(
            decision_id=later.decision_id, answer="deny", remember="once", media_job_id=job.pk
        )


def test_it_refuses_an_answer_naming_a_job_of_another_capability_d8(wren, conversation, context_of):
    job, _ = admit(conversation, context_of, capability="media.image")
    asked = ask_voice(conversation, context_of)
    with pytest.raises(ValidationError) as caught:
        services.decision_answer(
            decision_id=asked.decision_id, answer="allow", remember="once", media_job_id=job.pk
        )
    assert "media_job" in caught.value.errors


def test_it_starts_a_waiting_job_once_a_rule_allows_it_and_keeps_it_waiting_otherwise_d9(
    wren, conversation, context_of
):
    job, _ = admit(conversation, context_of)
    assert media_jobs.media_job_start(job_id=job.pk).status == "needs-confirmation"
    allow_voice(wren)
    assert media_jobs.media_job_start(job_id=job.pk).status == "running"


def test_it_lets_no_job_that_never_ran_complete_d9(conversation, context_of):
    job, _ = admit(conversation, context_of)
    with pytest.raises(Conflict):
        media_jobs.media_job_complete(job_id=job.pk)
    with pytest.raises(NotFound):
        media_jobs.media_job_start(job_id="00000000-0000-0000-0000-000000000000")


# ---------------------------------------------------------------------------------------------
# Deleting (SPEC §0: user data belongs to one user and goes with them)
