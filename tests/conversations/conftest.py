import pytest

from tests.factories import CharacterFactory, ConversationFactory, UserFactory


@pytest.fixture
def sam(db):
    return UserFactory(username="sam")


@pytest.fixture
def conv(sam):
    return ConversationFactory(user=sam, character=CharacterFactory(slug="captain-rowan"))
