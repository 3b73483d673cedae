"""The connection token (SPEC §15 M1, M2): found by its hash, refused once revoked or expired,
never a runtime token; and the REST API refuses connection tokens as `/mcp` refuses runtime
tokens."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from agents import credentials
from agents.models import Connection
from agents.services import connection_create
from config.clock import db_now
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_finds_a_live_connection_and_marks_its_use(sam):
    created = connection_create(user=sam, name="Desk")
    found = credentials.authenticate(created.token)
    assert found.pk == created.connection.pk and found.user == sam
    assert Connection.objects.get(pk=found.pk).last_used_at is not None


def test_it_refuses_a_revoked_an_expired_and_an_unknown_token(sam):
    """M2: a revoked or expired token is refused on the next request (nothing remembered)."""
    revoked = connection_create(user=sam, name="Revoked")
    expired = connection_create(user=sam, name="Expired")
    assert credentials.authenticate(revoked.token) is not None
    assert credentials.authenticate(expired.token) is not None
    Connection.objects.filter(pk=revoked.connection.pk).update(revoked_at=db_now())
    Connection.objects.filter(pk=expired.connection.pk).update(
        expires_at=db_now() - timedelta(seconds=1)
    )
    assert credentials.authenticate(revoked.token) is None
    assert credentials.authenticate(expired.token) is None
    assert credentials.authenticate(revoked.token + "x") is None
    assert credentials.authenticate("cmc_\x00") is None


def test_it_refuses_a_runtime_token(api_token):
    """M1: runtime tokens are not accepted by the MCP endpoint."""
    assert credentials.authenticate(api_token) is None


def test_it_is_refused_by_the_rest_api(sam):
    """M1: connection tokens are not accepted by `/api/v1/` (401)."""
    created = connection_create(user=sam, name="Desk", access="forget")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created.token}")
    r = client.get("/api/v1/memories", {"user": "sam"})
    assert_problem(r, 401, "unauthenticated")
    assert r["WWW-Authenticate"] == 'Bearer realm="api"'
