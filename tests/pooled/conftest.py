"""Every module of this directory runs through its own PgBouncer (transaction pooling, pool of
POOL_SIZE server connections, fewer than the concurrency tests' threads) in front of the test
database. It skips, saying why, only where the test database is not PostgreSQL or the
`pgbouncer` binary is not installed (`.ci/run` installs it)."""

import pytest

from bench.pgbouncer import PgBouncer, binary
from config.pooler import behind_pgbouncer
from tests.helpers import ON_POSTGRES

POOL_SIZE = 5
ROUTED = ("HOST", "PORT", "OPTIONS", "DISABLE_SERVER_SIDE_CURSORS")


@pytest.fixture(scope="module")
def pgbouncer(django_db_setup, django_db_blocker):
    """The module's PgBouncer, started after the test database exists."""
    if not ON_POSTGRES:
        pytest.skip("PgBouncer pools PostgreSQL connections: the test database is not PostgreSQL")
    if binary() is None:
        pytest.skip("pgbouncer is not installed (Debian: apt-get install pgbouncer; .ci/run does)")
    from django.db import connections

    bouncer = PgBouncer.for_settings(connections["default"].settings_dict, pool_size=POOL_SIZE)
    bouncer.start()
    yield bouncer
    bouncer.stop()


@pytest.fixture(scope="module", autouse=True)
def through_pgbouncer(pgbouncer):
    """The default connection (and every thread's) reaches the test database through the
    module's PgBouncer with the pooled settings; put back as it was afterwards."""
    from django.db import connections

    settings_dict = connections["default"].settings_dict
    saved = {key: settings_dict[key] for key in ROUTED if key in settings_dict}
    before = pgbouncer.stats()["transactions"]
    connections.close_all()
    try:
        settings_dict.update(
            HOST=pgbouncer.host,
            PORT=str(pgbouncer.port),
            OPTIONS=dict(settings_dict.get("OPTIONS") or {}),
        )
        behind_pgbouncer(settings_dict)
        yield pgbouncer
    finally:
        connections.close_all()
        for key in ROUTED:
            settings_dict.pop(key, None)
        settings_dict.update(saved)
    # The module's tests did go through it.
    assert pgbouncer.stats()["transactions"] > before


@pytest.fixture(autouse=True)
def _routed(through_pgbouncer):
    """Every test of the directory starts on the route through the pooler."""
    from django.db import connections

    assert connections["default"].settings_dict["PORT"] == str(through_pgbouncer.port)
    assert connections["default"].settings_dict["DISABLE_SERVER_SIDE_CURSORS"] is True
