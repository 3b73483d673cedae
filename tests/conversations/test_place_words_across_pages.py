"""The memory pages and the boundaries page word the same place the same way (one home:
`conversations.places`): a record kept only in a conversation and a rule made only for it."""

import datetime as dt

from memory.presentation import ScopeNames
from policy.selectors import Places
from tests.factories import ConversationFactory


def test_it_words_a_conversation_alike_on_the_memory_and_the_boundaries_pages(sam, rowan):
    untitled = ConversationFactory(user=sam, character=rowan, title="")
    type(untitled).objects.filter(pk=untitled.pk).update(
        created_at=dt.datetime(2026, 8, 3, 12, tzinfo=dt.UTC)
    )
    untitled.refresh_from_db()
    scope = f"conversation:{untitled.pk}"
    memory_words = ScopeNames(sam, [scope]).words(scope)
    boundary_words = dict(Places([untitled], []).choices()).get(scope)
    assert (
        memory_words
        == boundary_words
        == ("only in your conversation of 3 Aug 2026 with Captain Rowan")
    )
