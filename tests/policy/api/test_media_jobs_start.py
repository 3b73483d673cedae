"""`POST /media-jobs/{id}/start` (SPEC D8, D9, §10): a job whose ask was answered runs (and
then completes), a stale one is cancelled at start with both versions and cannot complete,
unknown jobs are 404. Completing on its own: test_media_jobs_complete.py."""

import uuid

import pytest

from tests.helpers import assert_problem
from tests.policy.api.calls import (
    admit,
    answer,
    create_rule,
)

pytestmark = pytest.mark.django_db


def test_it_lets_a_job_run_once_its_ask_is_answered_d8_d9(api, ctx):
    job = admit(api, ctx).json()
    body = answer(api, job["decision"]["decision_id"], media_job=job["id"]).json()
    assert body["media_job"]["status"] == "queued"
    started = api.post(f"/api/v1/media-jobs/{job['id']}/start", {}, format="json").json()
    assert started["status"] == "running"
    assert started["policy_version_at_start"] == {"defaults": 0, "user": 0}
    done = api.post(f"/api/v1/media-jobs/{job['id']}/complete", {}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "done"
    assert (
        api.post(f"/api/v1/media-jobs/{job['id']}/complete", {}, format="json").json()["status"]
        == "done"
    )


def test_it_cancels_a_stale_job_at_start_with_both_versions_d9(api, ctx):
    rule = create_rule(api).json()
    job = admit(api, ctx).json()
    assert (
        job["status"] == "queued" and "reason" not in job and "policy_version_at_start" not in job
    )
    api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {}, format="json")
    started = api.post(f"/api/v1/media-jobs/{job['id']}/start", {}, format="json")
    assert started.status_code == 200
    body = started.json()
    assert (body["status"], body["reason"]) == ("cancelled", "ask:no-applicable-rule")
    assert (body["policy_version_at_admission"], body["policy_version_at_start"]) == (
        {"defaults": 0, "user": 1},
        {"defaults": 0, "user": 2},
    )
    assert_problem(
        api.post(f"/api/v1/media-jobs/{job['id']}/complete", {}, format="json"), 409, "conflict"
    )


def test_it_answers_404_to_unknown_jobs_d9(api, capabilities):
    assert_problem(
        api.post(f"/api/v1/media-jobs/{uuid.uuid4()}/start", {}, format="json"), 404, "not_found"
    )
    assert_problem(api.post("/api/v1/media-jobs/nope/start", {}, format="json"), 404, "not_found")
