"""SPEC §12 O5: when the database cannot be reached — at connect or in the middle of a
request — the API answers `503` problem `unavailable` with `Retry-After` (and `retry_after`),
pages answer the styled 503 page; each outage is logged once when it starts and once when it
ends, with the count of requests refused, never once per request; a metric counts them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.db import InterfaceError, OperationalError, connection

from config import metrics, outage
from tests.factories import UserFactory
from tests.helpers import Collect, assert_problem

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def logs():
    handler = Collect()
    loggers = [logging.getLogger("companion.outage"), logging.getLogger("companion.errors")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler.records
    for logger in loggers:
        logger.removeHandler(handler)


class Cut:
    """Every query fails as on a connection the server dropped, while `on`."""

    def __init__(self, error=OperationalError):
        self.on, self.error = True, error

    def __call__(self, execute, sql, params, many, context):
        if self.on:
            raise self.error("server closed the connection unexpectedly")
        return execute(sql, params, many, context)


def refused_count() -> float:
    return metrics.DATABASE_UNAVAILABLE._value.get()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "error", [OperationalError, InterfaceError], ids=["operational", "interface"]
)
def test_it_answers_an_api_request_503_with_retry_after_mid_request(api, error, logs, settings):
    settings.DATABASE_RETRY_AFTER = 3
    UserFactory(username="ana")
    before = refused_count()
    with connection.execute_wrapper(Cut(error)):
        response = api.get("/api/v1/memories?user=ana")
    body = assert_problem(response, 503, "unavailable")  # the one shape of every problem
    assert response["Retry-After"] == "3"
    assert body["retry_after"] == 3
    assert body["request_id"] == response["X-Request-ID"]
    assert refused_count() == before + 1
    assert not [r for r in logs if r.name == "companion.errors"]  # not logged as a bug


@pytest.mark.django_db
def test_it_answers_a_page_with_the_styled_503_page(client, logs):
    user = UserFactory(username="ana")
    client.force_login(user)
    client.raise_request_exception = False  # failing in a middleware: Django signals it first
    with connection.execute_wrapper(Cut()):
        response = client.get("/memories/")
    assert response.status_code == 503 and response["Retry-After"] == "2"
    text = response.content.decode()
    assert "Error 503" in text and "briefly unavailable" in text and 'class="error-nav"' in text


@pytest.mark.django_db
def test_it_logs_an_outage_once_when_it_starts_and_once_when_it_ends(api, client, logs):
    UserFactory(username="ana")
    cut = Cut()
    with connection.execute_wrapper(cut):
        codes = [api.get("/api/v1/memories?user=ana").status_code for _ in range(3)]
        assert client.get("/healthz").status_code == 200  # reaches no database: ends nothing
        cut.on = False
        assert api.get("/api/v1/memories?user=ana").status_code == 200
        assert api.get("/api/v1/memories?user=ana").status_code == 200
    assert codes == [503, 503, 503]
    lines = [r.getMessage() for r in logs]
    assert lines == [
        "database_unavailable error=django.db.utils.OperationalError retry_after=2",
        "database_recovered refused_requests=3",
    ]
    assert all("server closed" not in line for line in lines)  # the error's type, not its message


def test_it_counts_driver_errors_and_their_causes_as_unavailable():
    assert outage.is_unavailable(psycopg.OperationalError("x"))
    try:
        try:
            raise psycopg.OperationalError("x")
        except psycopg.OperationalError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as wrapped:
        assert outage.is_unavailable(wrapped)
    assert not outage.is_unavailable(ValueError("x")) and not outage.is_unavailable(None)


def test_it_answers_503_at_connect_when_the_database_refuses_connections():
    """No server behind the address at all: the token check cannot connect (API), nor the
    sign-in (page); /healthz still answers."""
    script = (
        "import django, json; django.setup();"
        "from django.test import Client; c = Client();"
        "a = c.get('/api/v1/memories?user=ana', HTTP_AUTHORIZATION='Bearer cm_x');"
        "p = c.post('/login/', {'username': 'ana', 'password': 'x'});"
        "h = c.get('/healthz');"
        "print(json.dumps([a.status_code, a['Content-Type'], a.json()['code'], a['Retry-After'],"
        " p.status_code, 'Error 503' in p.content.decode(), h.status_code]))"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nowhere",
        "CACHE_URL": "locmemcache://",
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        503,
        "application/problem+json",
        "unavailable",
        "2",
        503,
        True,
        200,
    ]
    assert result.stderr.count("database_unavailable") == 1, result.stderr[-2000:]
    assert "unhandled_exception" not in result.stderr
