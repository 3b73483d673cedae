import pytest


@pytest.fixture
def priya(api, sam, conv):
    """F7.2's example in sam's conversation: the sister's name, where Priya works (by key and
    label), a routine that names her (by value) and a taste that does not; a message that
    says her name, and a turn to plan. Answers the memories' ids, the message's and the
    turn's."""
    from tests.memory.api.calls import assert_memory
    from tests.turns.api.reads import turn

    def remember(key, value):
        r = assert_memory(api, key=key, value=value, valid_from="2026-01-01T00:00:00Z")
        assert r.status_code == 201, r.content
        return r.json()["memory"]["id"]

    said = turn(api, conv, "t1", "Priya phoned me tonight.")
    ids = {
        "sister": remember("family.sister.name", "Priya"),
        "works": remember("people.priya.works_at", "Globex"),
        "visits": remember("user.routine", "visiting Priya on Sundays"),
        "tea": remember("user.likes", "green tea"),
        "said": said["user_message"]["id"],
    }
    ids["turn"] = turn(api, conv, "t2", "How was your day?")["id"]
    return ids
