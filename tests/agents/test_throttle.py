"""Each connection's own throttle bucket (SPEC §15 M2, O7): a runaway assistant is answered
429 with `Retry-After` while another connection of the same user goes on."""

import json

import pytest
from django.test import Client

from agents.services import connection_create
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def _post(token):
    return Client().post(
        "/mcp",
        LIST,
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_it_throttles_a_connection_on_its_own_bucket(sam, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**rates, "connection": "2/min"},
    }
    runaway = connection_create(user=sam, name="Runaway").token
    other = connection_create(user=sam, name="Other").token

    answers = [_post(runaway) for _ in range(3)]

    assert [r.status_code for r in answers[:2]] == [200, 200]
    assert "recall" in answers[0].content.decode()
    assert_problem(answers[2], 429, "throttled")
    assert int(answers[2]["Retry-After"]) >= 1
    assert _post(other).status_code == 200


def test_it_answers_401_with_www_authenticate_without_a_live_token(sam, api_token):
    """M2: a missing token, or a runtime token, is a 401 with `WWW-Authenticate`."""
    for r in (Client().post("/mcp", LIST, content_type="application/json"), _post(api_token)):
        assert_problem(r, 401, "unauthenticated")
        assert r["WWW-Authenticate"] == 'Bearer realm="mcp", error="invalid_token"'
