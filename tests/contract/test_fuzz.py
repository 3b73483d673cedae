"""API fuzzing: schemathesis generates requests from the project's own OpenAPI
schema for every operation, with a fixed seed and a bounded number of examples. No answer
may be a 5xx; every answer must conform to the schema (status code, content type, body);
every documented error is a problem+json body."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture
def runtime(db, in_process_wsgi):
    """A token and a little data, so generated requests also reach past the 404s."""
    from config.models import ApiToken
    from conversations.services import character_put, conversation_create, user_put

    user, _ = user_put(ref="fuzz")
    character, _ = character_put(slug="fuzz", name="Fuzz")
    conversation_create(user=user, character=character)
    _, raw = ApiToken.issue("fuzz")
    return {"Authorization": f"Bearer {raw}"}


@pytest.mark.fuzz
@schema.parametrize()
@settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_it_never_fails_and_always_matches_its_schema(case, runtime):
    case.call_and_validate(headers=runtime, checks=CHECKS)
