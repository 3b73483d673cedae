"""`POST /media-jobs` (SPEC D9, §10): a job carries its decision and versions, the same key
answers the job again, bad jobs name the field."""

import pytest

from tests.helpers import assert_problem
from tests.policy.api.calls import DECISION_FIELDS, JOB_FIELDS, admit

pytestmark = pytest.mark.django_db


def test_it_gives_a_job_its_decision_and_versions_d9(api, ctx):
    response = admit(api, ctx)
    assert response.status_code == 201
    job = response.json()
    assert set(job) == JOB_FIELDS | {"reason"}
    assert job["status"] == "needs-confirmation" and job["reason"] == "ask:no-applicable-rule"
    assert set(job["decision"]) == DECISION_FIELDS | {"question"}
    assert job["policy_version_at_admission"] == {"defaults": 0, "user": 0}


def test_it_answers_200_with_the_job_to_the_same_key_and_409_to_another_request_d9(api, ctx):
    first = admit(api, ctx)
    again = admit(api, ctx)
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
    assert_problem(admit(api, ctx, capability="media.image"), 409, "idempotency_key_reused")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"capability": "media.smell"}, "capability"),
        ({"capability": "tone.playful"}, "capability"),
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"idempotency_key": "x" * 256}, "idempotency_key"),
        ({"requested_by": "robot"}, "requested_by"),
    ],
)
def test_it_refuses_bad_jobs_naming_the_field_d9(api, ctx, change, field):
    body = {
        "context": ctx,
        "capability": "media.voice",
        "requested_by": "user",
        "idempotency_key": "k",
        **change,
    }
    assert_problem(
        api.post("/api/v1/media-jobs", body, format="json"), 400, "validation_error", field
    )
