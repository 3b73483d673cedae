import pytest

from tests.factories import CharacterFactory, ConversationFactory, UserFactory


@pytest.fixture
def sam(db):
    return UserFactory(username="sam")


@pytest.fixture
def rowan(db):
    return CharacterFactory(slug="captain-rowan", name="Captain Rowan")


@pytest.fixture
def conv(sam, rowan):
    return ConversationFactory(user=sam, character=rowan)


@pytest.fixture
def ctx(sam, rowan, conv):
    return {"user": sam.username, "character": rowan.slug, "conversation": str(conv.pk)}
