import pytest
from django.test import Client

from turns.creation import turn_create


@pytest.fixture
def page(sam):
    """A browser-like client signed in as sam."""
    client = Client()
    client.force_login(sam)
    return client


@pytest.fixture
def say(conv):
    """sam says something in the conversation: a turn whose message the extractor reads
    (SPEC §8), so memories get that message as their source."""
    counter = {"n": 0}

    def _say(text, conversation=None):
        counter["n"] += 1
        return turn_create(
            conversation_id=(conversation or conv).pk, turn_key=f"t{counter['n']}", content=text
        ).turn

    return _say
