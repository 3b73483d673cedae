"""Real threads on PostgreSQL (DESIGN: concurrency is proven where row locks are real): D7's
policy versions and D9's single start under concurrent calls."""

import threading

import pytest
from django.db import connection

from policy import media_jobs, services
from policy.models import DecisionLog, MediaJob, UserPolicyVersion
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from tests.helpers import postgres_only

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]

THREADS = 8


def run_together(target, count=THREADS):
    """Run `target(index)` in `count` threads released at once; return results and errors."""
    barrier = threading.Barrier(count)
    results, errors = [None] * count, []

    def worker(index):
        try:
            barrier.wait()
            results[index] = target(index)
        except Exception as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results, errors


def test_it_gives_concurrent_rule_changes_of_one_user_distinct_increasing_versions_d7(capabilities):
    user = UserFactory(username="wren")
    CharacterFactory(slug="rowan")
    existing = [
        services.rule_create(
            user=user,
            capability="media.voice",
            effect="allow",
            source="explicit-user",
            scope={"kind": "character", "character": "rowan"},
        )
        for _ in range(THREADS // 2)
    ]
    start = UserPolicyVersion.objects.get(user=user).version

    def change(index):
        if index % 2:
            rule = services.rule_create(
                user=user,
                capability="tone.playful",
                effect="deny",
                source="explicit-user",
                scope={"kind": "global"},
            )
        else:
            rule = services.rule_change(rule_id=existing[index // 2].pk, effect="deny")
        return rule.policy_version_after

    versions, errors = run_together(change)
    assert errors == []
    assert sorted(versions) == list(range(start + 1, start + THREADS + 1))
    assert UserPolicyVersion.objects.get(user=user).version == start + THREADS


def test_it_creates_one_version_row_when_a_new_users_first_changes_race_d7(capabilities):
    user = UserFactory(username="ash")

    def create(index):
        return services.rule_create(
            user=user,
            capability="media.image",
            effect="allow",
            source="explicit-user",
            scope={"kind": "global"},
        ).policy_version_after

    versions, errors = run_together(create)
    assert errors == []
    assert sorted(versions) == list(range(1, THREADS + 1))


def test_it_starts_a_job_once_under_concurrent_starts_d9(capabilities):
    conversation = ConversationFactory(user=UserFactory(username="wren"))
    services.rule_create(
        user=conversation.user,
        capability="media.voice",
        effect="allow",
        source="explicit-user",
        scope={"kind": "global"},
    )
    from conversations.selectors import load_context

    context = load_context({"user": "wren", "conversation": str(conversation.pk)})
    job, _ = media_jobs.media_job_admit(
        context=context, capability="media.voice", requested_by="user", idempotency_key="once"
    )

    results, errors = run_together(lambda index: media_jobs.media_job_start(job_id=job.pk))
    assert errors == []
    assert {result.status for result in results} == {"running"}
    assert len({result.started_at for result in results}) == 1
    # One admission decision and exactly one start decision: the others found it running.
    assert DecisionLog.objects.filter(user=conversation.user).count() == 2


def test_it_creates_one_job_for_concurrent_admissions_with_one_key_d9(capabilities):
    conversation = ConversationFactory(user=UserFactory(username="wren"))
    from conversations.selectors import load_context

    def admit(index):
        context = load_context({"user": "wren", "conversation": str(conversation.pk)})
        job, created = media_jobs.media_job_admit(
            context=context,
            capability="media.image",
            requested_by="assistant",
            idempotency_key="same",
        )
        return job.pk, created

    results, errors = run_together(admit)
    assert errors == []
    assert len({pk for pk, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert MediaJob.objects.count() == 1
