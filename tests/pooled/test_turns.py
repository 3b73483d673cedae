"""Rerun through PgBouncer: see tests/pooled/__init__.py."""

from tests.pooled import rerun

rerun(globals(), "tests.turns.api.test_turn_create")
rerun(globals(), "tests.turns.api.test_turn_prompt_plan")
rerun(globals(), "tests.turns.api.test_turn_reply")
rerun(globals(), "tests.conversations.api.test_conversation_delete")
