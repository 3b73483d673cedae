"""Rerun through PgBouncer: see tests/pooled/__init__.py."""

from tests.pooled import rerun

rerun(globals(), "tests.turns.api.test_turn_create_with_plan")
