import pytest

from conversations.domain import Scope
from tests.memory.api import calls


# The memory tests name the shared world by role: the user, the character, the conversation.
@pytest.fixture
def user(sam):
    return sam


@pytest.fixture
def character(rowan):
    return rowan


@pytest.fixture
def conversation(conv):
    return conv


USER = Scope("user")


@pytest.fixture
def lagging(api, sam):
    """Sam's records whose stored status lags their state (tests.memory.api.calls.lagging)."""
    return calls.lagging(api)
