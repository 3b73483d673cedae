import pytest

from turns.continuity import play


@pytest.fixture
def story(db):
    """wren, after the continuity script's conversations (turns.continuity): a user with rows
    of every section of a snapshot."""
    _, user = play(username="wren", keep=True)
    return user
