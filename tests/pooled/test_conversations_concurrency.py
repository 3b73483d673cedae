"""Rerun through PgBouncer: see tests/pooled/__init__.py."""

from tests.pooled import rerun

rerun(globals(), "tests.turns.test_concurrency")
