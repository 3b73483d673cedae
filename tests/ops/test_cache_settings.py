"""SPEC §12 O4, O6, the settings: the shared cache is Django's database cache by default (its
table made by `migrate`, so a fresh `make run` needs no manual step), Django's own RedisCache
with timeouts and a circuit breaker (config.cache) when `CACHE_URL=redis://…`; a system check
warns when production runs on a per-process cache."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DJANGO_ENV": "production",
    "DJANGO_DEBUG": "false",
    "ALLOWED_HOSTS": "memory.example.org",
    "SECRET_KEY": "k" * 20 + "-a-long-random-production-secret-" + "9" * 20,
}


def run(args, **env):
    base = {
        k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")
    }
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def backend(**env) -> dict:
    script = (
        "import django, json; django.setup(); from django.conf import settings; "
        "print(json.dumps(settings.CACHES['default']))"
    )
    result = run(["-c", script], DJANGO_SETTINGS_MODULE="config.settings", **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_it_shares_counters_in_the_database_cache_by_default():
    cache = backend()
    assert cache["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    assert cache["LOCATION"] == "companion_cache"
    assert cache["OPTIONS"]["MAX_ENTRIES"] >= 100_000


@pytest.mark.parametrize("url", ["redis://cache.internal:6379/1", "rediss://cache.internal:6380/0"])
def test_it_uses_the_resilient_redis_cache_for_a_redis_url(url):
    """O6: connect and socket timeouts of 100 ms by default, and a breaker of 5 s."""
    cache = backend(CACHE_URL=url)
    assert cache == {
        "BACKEND": "config.cache.ResilientRedisCache",
        "LOCATION": url,
        "OPTIONS": {"socket_connect_timeout": 0.1, "socket_timeout": 0.1, "breaker_seconds": 5.0},
    }
    assert backend(CACHE_URL=url, CACHE_SOCKET_TIMEOUT="0.05")["OPTIONS"]["socket_timeout"] == 0.05


def test_it_creates_the_cache_table_with_migrate(tmp_path):
    """A fresh database: `migrate` alone makes the table the default cache needs."""
    db = tmp_path / "fresh.sqlite3"
    result = run(["manage.py", "migrate", "--noinput", "-v", "0"], DATABASE_URL=f"sqlite:///{db}")
    assert result.returncode == 0, result.stderr
    import sqlite3

    tables = {
        row[0]
        for row in sqlite3.connect(db).execute("SELECT name FROM sqlite_master WHERE type='table'")
    }
    assert "companion_cache" in tables


def test_it_warns_when_production_runs_on_a_per_process_cache():
    result = run(["manage.py", "check"], CACHE_URL="locmemcache://", **PRODUCTION)
    assert "companion.W001" in result.stderr + result.stdout
    quiet = run(["manage.py", "check"], **PRODUCTION)
    assert quiet.returncode == 0 and "companion.W001" not in quiet.stderr + quiet.stdout


def test_it_does_not_warn_outside_production():
    result = run(["manage.py", "check"], CACHE_URL="locmemcache://")
    assert result.returncode == 0 and "companion.W001" not in result.stderr + result.stdout
