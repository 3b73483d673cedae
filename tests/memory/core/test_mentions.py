"""SPEC F6 part 2: when a message mentions a forgotten value — the pure matching, without a
database. casefold(NFKC(text)), whitespace runs as one space, accents kept, whole words, and
the scripts written without spaces matched wherever they occur."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.mentions import matcher, mentions, needle, normalise

CASES = [
    # (text, value, mentioned)
    ("My cat is called Miso.", "Miso", True),
    ("my cat is called MISO", "Miso", True),  # case
    ("MISO soup", "miso", True),
    ("Misobar is a place", "Miso", False),  # a letter right after
    ("The amiso thing", "Miso", False),  # a letter right before
    ("Miso2 is a robot", "Miso", False),  # a digit right after
    ("Call me Miso!", "Miso", True),  # punctuation around is not a letter
    ("(Miso)", "Miso", True),
    ("Miso's bowl", "Miso", True),  # an apostrophe ends the word
    ("She lives in New   York now", "New York", True),  # whitespace runs as one space
    ("She lives in New\nYork", "New York", True),
    ("She lives in NewYork", "New York", False),
    ("New Yorker magazine", "New York", False),
    ("ＭＩＳＯ is full-width", "Miso", True),  # NFKC folds compatibility forms
    ("Miso is full-width here", "ＭＩＳＯ", True),
    ("ﬁsh and chips", "fish", True),  # the ligature folds to "fi"
    ("Zoë called", "Zoë", True),
    ("Zoe called", "Zoë", False),  # accents are kept
    ("Zoë called", "Zoe", False),
    ("Zoe\u0308 called", "Zoë", True),  # a combining diaeresis composes under NFKC
    ("STRASSE", "Straße", True),  # casefold: ß is ss
    ("我的猫叫小米。", "小米", True),  # Han: wherever it occurs
    ("小米粥很好吃", "小米", True),
    ("ねこのミソです", "ミソ", True),  # Katakana inside Hiragana
    ("แมวชื่อมิโซะ", "มิโซะ", True),  # Thai
    ("Miso小米", "小米", True),
    ("Mi", "Mi", True),  # two characters are enough
    ("I am X", "X", False),  # under 2 characters: provenance only
    ("", "Miso", False),
    ("Miso", "", False),
    ("I live in Boston, MA", "Boston", True),
    ("Bostonian", "Boston", False),
    ("the basil is named harbor-side", "harbor", True),  # a hyphen is not a letter
]


@pytest.mark.parametrize(("text", "value", "expected"), CASES)
def test_it_matches_whole_words_as_f6_counts_them(text, value, expected):
    assert mentions(text, value) is expected


def test_it_normalises_case_compatibility_forms_and_whitespace():
    assert normalise("  Ｍｉｓｏ\t\n IS  ") == "miso is"


def test_it_leaves_values_under_two_characters_to_provenance():
    assert needle("X") is None
    assert needle(" x ") is None
    assert needle("xy") == "xy"
    assert matcher(["X"])("X marks the spot") is False


def test_it_matches_any_of_several_values():
    match = matcher(["Harbor", "Marlowe"])
    assert match("It is Marlowe now, not Harbor.")
    assert match("marlowe")
    assert not match("Harbortown")


words = st.text(alphabet=st.characters(categories=["Lu", "Ll", "Nd"]), min_size=2, max_size=8)


@settings(deadline=None)
@given(words, st.text(max_size=20), st.text(max_size=20))
def test_it_finds_a_value_set_apart_by_spaces(value, before, after):
    """A value with a space on each side is always mentioned, whatever surrounds it."""
    assert mentions(f"{before} {value} {after}", value)


@settings(deadline=None)
@given(words, words)
def test_it_is_deterministic_and_order_independent(a, b):
    text = f"{a} and {b}"
    assert (
        matcher([a, b])(text) == matcher([b, a])(text) == (mentions(text, a) or mentions(text, b))
    )
