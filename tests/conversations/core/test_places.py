"""A place in words (`conversations.places`): one wording for a record's scope (SPEC §1), a
rule's scope (§5) and support's reasons, tested without a database."""

import pytest

from conversations import places


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("*", "everywhere, with every character and in every conversation"),
        ("user", "everywhere"),
        ("global", "everywhere"),
        ("character", "with Captain Rowan"),
        ("conversation", "only in “Rooftop greenhouse” with Captain Rowan"),
        ("scene", "only in the “greenhouse” scene of “Rooftop greenhouse” with Captain Rowan"),
    ],
)
def test_it_words_each_kind_of_place(kind, expected):
    named = places.conversation_words("Rooftop greenhouse", "3 Aug 2026", "Captain Rowan")
    words = places.place_words(
        kind, character_name="Captain Rowan", conversation=named, scene="greenhouse"
    )
    assert words == expected


def test_it_names_an_untitled_conversation_by_the_day_it_started_then_with_whom():
    assert (
        places.conversation_words("", "3 Aug 2026", "Captain Rowan")
        == "your conversation of 3 Aug 2026 with Captain Rowan"
    )


def test_it_leaves_out_with_whom_where_the_page_is_about_them_already():
    assert places.conversation_words("Rooftop greenhouse", "3 Aug 2026") == "“Rooftop greenhouse”"
    assert places.conversation_words("", "3 Aug 2026") == "your conversation of 3 Aug 2026"


def test_it_says_a_deleted_conversation_was_deleted_never_its_id():
    assert places.place_words("conversation") == "only in a conversation that was deleted"
