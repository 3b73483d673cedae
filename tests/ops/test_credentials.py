"""The token check on the hot path (config.credentials): a valid token is remembered by the
process for `API_TOKEN_CACHE_SECONDS`, so a trivial authenticated request costs no query; a
revoked token is refused by every process within that time (at once by the one revoking it);
`last_used_at` is written at most once per `API_TOKEN_LAST_USED_SECONDS`."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config import credentials
from config.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def remembered(settings, monkeypatch):
    settings.API_TOKEN_CACHE_SECONDS = 5
    settings.API_TOKEN_LAST_USED_SECONDS = 300
    settings.ROOT_URLCONF = "tests.ops.ping_urls"
    now = [1000.0]
    monkeypatch.setattr(credentials.time, "monotonic", lambda: now[0])
    return now


def count(fn) -> int:
    with CaptureQueriesContext(connection) as captured:
        fn()
    return len(captured)


def test_it_checks_a_remembered_token_with_no_query(api, remembered):
    # The first check: the token with the catalog version, and its first use written.
    assert count(lambda: api.get("/api/v1/test-ping")) == 2
    assert ApiToken.objects.get().last_used_at is not None
    for _ in range(3):
        assert count(lambda: api.get("/api/v1/test-ping")) == 0
    remembered[0] += 5  # forgotten after 5 s: checked again, last use not written again
    assert count(lambda: api.get("/api/v1/test-ping")) == 1


def test_it_reads_the_catalog_version_once_for_an_endpoint_reading_the_catalog(
    api, remembered, settings
):
    """With the token from memory, catalog freshness costs the one statement it used to share
    with the token check: the same count as a check per request."""
    from tests.factories import UserFactory

    UserFactory(username="ana")
    body = {"context": {"user": "ana"}}
    api.post("/api/v1/memory/resolve", body, format="json")  # warm both ways
    with CaptureQueriesContext(connection) as remembered_token:
        assert api.post("/api/v1/memory/resolve", body, format="json").status_code == 200
    settings.API_TOKEN_CACHE_SECONDS = 0
    with CaptureQueriesContext(connection) as checked:
        assert api.post("/api/v1/memory/resolve", body, format="json").status_code == 200
    sqls = [q["sql"] for q in remembered_token.captured_queries]
    assert len(sqls) == len(checked)
    assert not any("config_apitoken" in sql for sql in sqls)
    assert sum("config_catalogversion" in sql for sql in sqls) == 1, sqls


def test_it_refuses_a_revoked_token_within_the_cache_time(api, remembered):
    assert api.get("/api/v1/test-ping").status_code == 200
    ApiToken.objects.update(revoked_at=timezone.now())  # revoked by another process
    assert api.get("/api/v1/test-ping").status_code == 200  # remembered here for up to 5 s
    remembered[0] += 5
    response = api.get("/api/v1/test-ping")
    assert response.status_code == 401 and response.json()["code"] == "unauthenticated"


def test_it_refuses_a_revoked_token_at_once_in_the_revoking_process(api, remembered):
    assert api.get("/api/v1/test-ping").status_code == 200
    tokens = list(ApiToken.objects.all())
    ApiToken.objects.update(revoked_at=timezone.now())
    credentials.forget(tokens)
    assert api.get("/api/v1/test-ping").status_code == 401


def test_it_never_remembers_a_wrong_token(client, remembered):
    for _ in range(2):
        assert (
            count(lambda: client.get("/api/v1/test-ping", HTTP_AUTHORIZATION="Bearer cm_wrong"))
            == 1
        )


def test_it_writes_the_last_use_at_most_once_per_interval(api, remembered, settings):
    settings.API_TOKEN_CACHE_SECONDS = 0  # every request checks the database
    api.get("/api/v1/test-ping")
    first = ApiToken.objects.get().last_used_at
    assert [count(lambda: api.get("/api/v1/test-ping")) for _ in range(3)] == [1, 1, 1]
    assert ApiToken.objects.get().last_used_at == first
