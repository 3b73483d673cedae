"""Catalog data cached per process (config.catalog), across processes: a gunicorn worker that
holds the characters in its cache sees a character created — or renamed with raw SQL, as an
operator in psql would — by another process on its very next request.

PostgreSQL only: the server process shares the test database, which SQLite keeps in the test
process's memory."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from django.db import connection

from tests.helpers import ON_POSTGRES
from tests.ops.test_shared_counters import Server

pytestmark = [
    pytest.mark.skipif(
        not ON_POSTGRES,
        reason="needs PostgreSQL: the gunicorn process shares the test database, "
        "which SQLite keeps in the test process's memory",
    ),
    pytest.mark.django_db(transaction=True),
]

PORT = 8441


@pytest.fixture
def server():
    running = Server(PORT, None, 1, THROTTLE_TOKEN="6000/min", WEB_CONCURRENCY="1")
    try:
        running.wait()
        yield running
    finally:
        running.stop()


def create_conversation(server: Server, token: str, character: str) -> int:
    request = urllib.request.Request(
        server.base + "/api/v1/conversations",
        method="POST",
        data=json.dumps({"user": "wren", "character": character}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_it_shows_a_worker_another_processs_catalog_change_on_its_next_request(server):
    from config.models import ApiToken
    from conversations.models import Character
    from tests.factories import CharacterFactory, UserFactory

    UserFactory(username="wren")
    CharacterFactory(slug="rowan")
    _, token = ApiToken.issue("catalog")
    assert create_conversation(server, token, "rowan") == 201  # the worker now holds the characters
    assert create_conversation(server, token, "harbor") == 400  # unknown to its warm cache

    Character.objects.create(slug="harbor", name="Harbor", created_at="2026-01-01T00:00:00Z")
    assert create_conversation(server, token, "harbor") == 201

    with connection.cursor() as cursor:
        cursor.execute("UPDATE conversations_character SET slug = 'marlowe' WHERE slug = 'harbor'")
    assert create_conversation(server, token, "harbor") == 400
    assert create_conversation(server, token, "marlowe") == 201
