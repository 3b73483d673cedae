import pytest

from conversations.domain import Scope
from tests.factories import CharacterFactory, ConversationFactory, UserFactory


@pytest.fixture
def user(db):
    return UserFactory(username="sam")


@pytest.fixture
def character(db):
    return CharacterFactory(slug="captain-rowan", name="Captain Rowan")


@pytest.fixture
def conversation(user, character):
    return ConversationFactory(user=user, character=character)


USER = Scope("user")
