"""Rerun through PgBouncer: see tests/pooled/__init__.py."""

from tests.pooled import rerun

rerun(globals(), "tests.conversations.test_one_round_trip")
