"""Rerun through PgBouncer: see tests/pooled/__init__.py."""

from tests.pooled import rerun

rerun(globals(), "tests.conversations.test_turn_create_queries")
