"""SPEC §12 O2, O6: `/healthz` answers without touching the database; `/readyz` reports each
dependency (`database`, `cache`, `migrations`) and answers 200 when the database answers and no
migration is pending, else 503 naming the failed check. Neither needs a token, neither says
more."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def test_it_is_healthy_without_touching_the_database(client):
    """No database access is allowed in this test: a query would fail the request."""
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_it_is_ready_when_the_database_answers_and_every_migration_ran(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "cache": "ok", "migrations": "ok"}
    assert response["Cache-Control"].startswith("max-age=0")


@pytest.mark.django_db
def test_it_is_not_ready_while_a_migration_is_pending(client):
    """The latest migration of an app, unrecorded in the database, is pending (the change is
    rolled back with the test)."""
    from django.db.migrations.loader import MigrationLoader

    app, name = next(
        node for node in MigrationLoader(connection).graph.leaf_nodes() if node[0] == "memory"
    )
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s", [app, name])
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "failed": "migrations",
        "database": "ok",
        "cache": "ok",
        "migrations": "pending",
    }


def test_it_is_not_ready_when_the_database_is_unreachable_but_still_healthy():
    """A process whose database cannot be reached: /readyz 503 naming the database, /healthz 200."""
    script = (
        "import django, json; django.setup();"
        "from django.test import Client; c = Client();"
        "r = c.get('/readyz'); h = c.get('/healthz');"
        "print(json.dumps([r.status_code, r.json(), h.status_code]))"
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
    assert result.stdout.strip().splitlines()[-1] == (
        '[503, {"status": "unavailable", "failed": "database", "database": "down", '
        '"cache": "ok", "migrations": "unknown"}, 200]'
    )


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/healthz", "/readyz"])
def test_it_needs_no_token_and_refuses_other_methods(client, url):
    assert client.get(url).status_code == 200
    assert client.post(url).status_code == 405
