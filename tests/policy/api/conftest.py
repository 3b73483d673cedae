import pytest


# The policy API tests' context: wren with Rowan in their conversation (tests/policy/conftest.py).
@pytest.fixture
def ctx(conversation, capabilities):
    return {"user": "wren", "character": "rowan", "conversation": str(conversation.pk)}
