"""`DATABASE_POOLER=pgbouncer` (config.pooler; docs/DECISIONS.md "PgBouncer in transaction
pooling"): the settings a deployment behind PgBouncer in transaction pooling runs with, read
in a fresh process as a server would read them."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOW = (
    "import django, json; django.setup(); from django.conf import settings; "
    "d = settings.DATABASES['default']; print(json.dumps({'cursors': "
    "d.get('DISABLE_SERVER_SIDE_CURSORS', False), 'options': d['OPTIONS'], "
    "'pooler': settings.DATABASE_POOLER}))"
)


def settings_with(**env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DATABASE_POOLER")}
    return subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
    )


def test_it_turns_off_server_side_cursors_and_prepared_statements_behind_pgbouncer():
    result = settings_with(
        DATABASE_URL="postgres://app@db.internal:6432/companion", DATABASE_POOLER="pgbouncer"
    )
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["pooler"] == "pgbouncer" and shown["cursors"] is True
    assert shown["options"]["prepare_threshold"] is None
    assert shown["options"]["server_side_binding"] is False
    # The connection's other options (SPEC §12 O6) stay as they are.
    assert shown["options"]["connect_timeout"] == 3


def test_it_keeps_server_side_cursors_on_postgresql_without_the_setting():
    result = settings_with(DATABASE_URL="postgres://app@db.internal:5432/companion")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert (shown["pooler"], shown["cursors"]) == ("", False)
    assert "prepare_threshold" not in shown["options"]


def test_it_refuses_a_pooler_on_sqlite_or_an_unknown_pooler_at_start():
    on_sqlite = settings_with(DATABASE_URL="sqlite:///x.sqlite3", DATABASE_POOLER="pgbouncer")
    assert on_sqlite.returncode != 0
    assert "DATABASE_POOLER=pgbouncer needs a PostgreSQL DATABASE_URL" in on_sqlite.stderr
    unknown = settings_with(DATABASE_URL="postgres://app@db/companion", DATABASE_POOLER="pgpool")
    assert unknown.returncode != 0 and "DATABASE_POOLER must be one of" in unknown.stderr
