"""SPEC F7.4 on PostgreSQL: the database's prefilter of a forget (`_prefilter` on
`folded_sql`) finds at least what the matcher finds — ignorables inside a word, separators
between words, compatibility forms and the sharp s — so the forget withholds the same
messages on PostgreSQL as the pure matcher says (F6's cost target stands: it still filters)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.mentions import matcher, needle
from memory.withholding import _mentioning, _prefilter, conversations_of_scope, folded_sql
from tests.factories import ConversationFactory, MessageFactory, UserFactory
from tests.helpers import postgres_only

pytestmark = [postgres_only, pytest.mark.django_db]

TEXTS = (
    "My cat Mi\u00adso sat down.",  # soft hyphen
    "Mi\u200bso again",  # zero-width space
    "Mi\u2060so, with a word joiner",
    "M\ufe0fiso with a variation selector",
    "Mi\u034fso with a grapheme joiner",
    "Mi\U000e0041so with a tag",
    "\u202eMiso\u202c between bidirectional overrides",
    "ＭＩＳＯ in full width",
    "Sir-Biscuit is asleep",
    "sir_biscuit is the handle",
    "Sir.  Biscuit, formally",
    "ＳＩＲ\u3000ＢＩＳＣＵＩＴ",
    "SIR\u200d BISCUIT",
    "A KIẞ for you",  # capital sharp s: case folds to "kiss"
    "SirBiscuit is one word",
    "Biscuit alone",
    "Misobar opens late",
    "Nothing to see here.",
)
VALUES = ("Miso", "Sir Biscuit", "kiss")


@pytest.fixture
def messages():
    user = UserFactory(username="speller")
    conv = ConversationFactory(user=user)
    made = [MessageFactory(conversation=conv, content=text) for text in TEXTS]
    return user, {str(m.pk): m.content for m in made}


def _candidates(user, value) -> set[str]:
    rows = (
        conversations_of_scope(user, "*")
        .annotate(folded=folded_sql("content"))
        .filter(_prefilter([needle(value)]))
        .values_list("id", flat=True)
    )
    return {str(r) for r in rows}


@pytest.mark.parametrize("value", VALUES)
def test_it_lets_through_every_message_the_matcher_finds_and_drops_others(messages, value):
    """F7.4: what the pure matcher finds is a subset of the database's candidates, and the
    candidates still leave out a message that does not hold the longest word at all."""
    user, texts = messages
    found = {mid for mid, text in texts.items() if matcher([value])(text)}
    candidates = _candidates(user, value)
    assert found
    assert found <= candidates
    nothing = next(mid for mid, text in texts.items() if text == "Nothing to see here.")
    assert nothing not in candidates


def test_it_withholds_on_postgresql_exactly_what_the_matcher_finds(messages):
    """F7.4 and F6 part 2 through the forget's own read: every tricky spelling is found."""
    user, texts = messages
    at = timezone.now() + timedelta(seconds=1)
    for value in VALUES:
        expected = {mid for mid, text in texts.items() if matcher([value])(text)}
        assert _mentioning(user, "*", at, [value]) == expected
    by_text = {text: mid for mid, text in texts.items()}
    assert _mentioning(user, "*", at, ["Miso"]) == {by_text[t] for t in TEXTS[:8]}
    assert _mentioning(user, "*", at, ["Sir Biscuit"]) == {by_text[t] for t in TEXTS[8:13]}
    assert _mentioning(user, "*", at, ["kiss"]) == {by_text["A KIẞ for you"]}
