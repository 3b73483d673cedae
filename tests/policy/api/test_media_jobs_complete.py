"""`POST /media-jobs/{id}/complete` (SPEC D9, §10): a running job is `done` and completing it
again changes nothing; a job that never ran is a 409; a body is a 400 naming the field; an
unknown job a 404."""

import uuid

import pytest

from tests.helpers import assert_problem
from tests.policy.api.calls import admit, answer, create_rule

pytestmark = pytest.mark.django_db


def complete(api, job_id, body=None):
    return api.post(f"/api/v1/media-jobs/{job_id}/complete", body or {}, format="json")


def running(api, ctx):
    job = admit(api, ctx).json()
    answer(api, job["decision"]["decision_id"], media_job=job["id"])
    started = api.post(f"/api/v1/media-jobs/{job['id']}/start", {}, format="json").json()
    assert started["status"] == "running"
    return job


def test_it_marks_a_running_job_done_and_changes_nothing_the_second_time_d9(api, ctx):
    job = running(api, ctx)
    done = complete(api, job["id"])
    assert done.status_code == 200
    assert (done.json()["id"], done.json()["status"]) == (job["id"], "done")
    again = complete(api, job["id"])
    assert again.status_code == 200 and again.json() == done.json()


def test_it_refuses_a_job_waiting_for_its_answer_with_a_409_d9(api, ctx):
    job = admit(api, ctx).json()
    assert job["status"] == "needs-confirmation"
    assert_problem(complete(api, job["id"]), 409, "conflict")


def test_it_refuses_a_queued_job_that_has_not_started_with_a_409_d9(api, ctx):
    create_rule(api)
    job = admit(api, ctx).json()
    assert job["status"] == "queued"
    assert_problem(complete(api, job["id"]), 409, "conflict")
    started = api.post(f"/api/v1/media-jobs/{job['id']}/start", {}, format="json").json()
    assert started["status"] == "running"


def test_it_refuses_a_body_with_a_400_naming_the_field(api, ctx):
    job = running(api, ctx)
    assert_problem(complete(api, job["id"], {"result": "ok"}), 400, "validation_error", "result")
    assert complete(api, job["id"]).json()["status"] == "done"


def test_it_answers_404_to_unknown_jobs_d9(api, capabilities):
    assert_problem(complete(api, uuid.uuid4()), 404, "not_found")
    assert_problem(complete(api, "nope"), 404, "not_found")
