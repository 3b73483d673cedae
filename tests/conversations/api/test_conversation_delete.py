"""`DELETE /conversations/{id}` (SPEC §7): the conversation goes and memories lose those
sources."""

import pytest

from conversations.models import Message, Turn
from tests.turns.api.calls import turn

pytestmark = pytest.mark.django_db


def test_it_deletes_a_conversation_and_memories_lose_those_sources(api, conv):
    """§7: deleting a conversation deletes its messages and turns; memories keep their
    evidence time but lose the sources (so P1 excludes them from prompts)."""
    t = turn(api, conv, "t1", "My dog's name is Rex.").json()
    memory = t["extracted"][0]["memory"]
    assert api.delete(f"/api/v1/conversations/{conv.pk}").status_code == 204
    after = api.get(f"/api/v1/memories/{memory['id']}").json()
    assert after["sources"] == [] and after["evidence_time"] == memory["evidence_time"]
    assert not Message.objects.exists() and not Turn.objects.exists()
