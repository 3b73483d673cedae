"""SPEC §10 C1: a request the schema allows is never refused for its shape. schemathesis
generates schema-valid requests only (positive mode) for every operation; their references
point into a world where the users, characters, conversations, turns, memories, rules and
jobs exist, so every answer must be accepted (2xx) or a reference/state refusal (404, 409),
or the 422 `budget_exceeded` a plan may give (I3) — never a 400 for the request's shape."""

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.generation.modes import GenerationMode

from config.wsgi import application
from tests.contract.test_fuzz import CHECKS
from tests.contract.test_schema_conformance import keep_the_test_connection
from tests.contract.world import build, point_at

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
schema.config.generation.update(modes=[GenerationMode.POSITIVE])

ACCEPTED = {200, 201, 204, 404, 409, 422}


@pytest.fixture
def world(api, api_token, in_process_wsgi, monkeypatch):
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})
    return build(api), {"Authorization": f"Bearer {api_token}"}


@pytest.mark.fuzz
@schema.parametrize()
@settings(
    max_examples=5,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_it_accepts_every_schema_valid_request(case, world):
    w, headers = world
    point_at(w, case)
    keep_the_test_connection()
    response = case.call_and_validate(headers=headers, checks=CHECKS)
    assert response.status_code in ACCEPTED, (
        case.operation.label,
        case.path_parameters,
        case.query,
        case.body,
        response.text[:800],
    )
