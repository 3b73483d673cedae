import pytest

from conversations.scopes import Scope


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
