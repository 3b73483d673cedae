"""SPEC F6 part 2 and F7.4: when a message mentions a forgotten value — the pure matching,
without a database. casefold(NFKC(text)) without the default-ignorable code points, accents
kept, combining marks as letters, whole words, separator runs inside a value matching any
separator run, and the scripts written without spaces matched wherever they occur."""

import itertools
import unicodedata

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

# F7.4: spellings of the same words.
SPELLINGS = [
    # (text, value, mentioned)
    ("Sir-Biscuit is asleep", "Sir Biscuit", True),
    ("call him sir_biscuit", "Sir Biscuit", True),  # the underscore separates words
    ("Sir.  Biscuit, formally", "Sir Biscuit", True),
    ("Sir / Biscuit", "Sir Biscuit", True),
    ("SirBiscuit", "Sir Biscuit", False),  # no separator at all is one word
    ("Biscuit alone", "Sir Biscuit", False),
    ("Sir, the Biscuit", "Sir Biscuit", False),  # another word between them
    ("Sir Biscuits", "Sir Biscuit", False),  # whole words still
    ("Sir Biscuit", "Sir-Biscuit", True),  # the value's separator is any separator too
    ("Sir Biscuit", "sir_biscuit", True),
    ("My cat Miso.", "Miso!", True),  # separators around the value are not matched
    ("(Miso)", "(Miso)", True),
    ("Mi\u00adso", "Miso", True),  # soft hyphen
    ("Mi\u200bso", "Miso", True),  # zero-width space
    ("Mi\u200c\u200dso", "Miso", True),  # zero-width non-joiner and joiner
    ("Mi\u2060so", "Miso", True),  # word joiner
    ("\u200fMiso\u200e", "Miso", True),  # right-to-left and left-to-right marks
    ("\u202eMiso\u202c", "Miso", True),  # bidirectional override and pop
    ("M\ufe0fiso", "Miso", True),  # variation selector
    ("Mi\U000e0041so", "Miso", True),  # tag character
    ("\ufeffMiso", "Miso", True),  # zero-width no-break space
    ("Mi\u034fso", "Miso", True),  # combining grapheme joiner
    ("Miso", "Mi\u00adso", True),  # in the value as well
    ("Sir\u200b-\u200bBiscuit", "Sir Biscuit", True),
    ("Zoe\u200b\u0308 called", "Zoë", True),  # an ignorable does not keep the accent apart
    ("Zoë called", "Zoe", False),  # accents stay significant
    ("Zoe called", "Zoë", False),
    ("Misó", "Miso", False),  # a composed accent is another letter
    ("Mis\u0332o", "Miso", False),  # a combining mark is a letter inside the word
    ("Miso\u0332 sat", "Miso", False),  # and a letter right after it
    ("\u0332Miso", "Miso", False),  # and right before it
    ("b\u0332 and a", "b\u0332", True),  # a value ending in a mark, two characters
    ("ＳＩＲ－ＢＩＳＣＵＩＴ", "Sir Biscuit", True),  # full-width letters and hyphen
    ("ＳＩＲ\u3000ＢＩＳＣＵＩＴ", "Sir Biscuit", True),  # ideographic space
    ("Sir\uff3fBiscuit", "Sir Biscuit", True),  # full-width low line
    ("小米、粥", "小米 粥", True),  # unspaced scripts: separators generalise too
    ("小米粥", "小米 粥", False),
    ("我的小\u200b米", "小米", True),
    ("🐱🐱 on the mat", "🐱🐱", True),  # no word characters: matched as written
    ("x🐱🐱", "🐱🐱", False),
    ("X.", "X.", False),  # one character of words: provenance only
    ("x-y", "x y", True),
]


@pytest.mark.parametrize(("text", "value", "expected"), CASES)
def test_it_matches_whole_words_as_f6_counts_them(text, value, expected):
    assert mentions(text, value) is expected


@pytest.mark.parametrize(("text", "value", "expected"), SPELLINGS)
def test_it_matches_the_spellings_of_the_same_words_as_f7_4_counts_them(text, value, expected):
    """F7.4: ignorables dropped, combining marks as letters, separator runs inside a value
    matching any separator run, accents significant, full-width forms folded."""
    assert mentions(text, value) is expected
    assert matcher([value])(text) is expected


def test_it_normalises_case_compatibility_forms_and_whitespace():
    assert normalise("  Ｍｉｓｏ\t\n IS  ") == "miso is"


def test_it_drops_every_default_ignorable_code_point_of_f7_4():
    """F7.4: each code point of the fixed set, between two letters, disappears."""
    ranges = [
        (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
        (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
        (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
        (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
    ]  # fmt: skip
    for lo, hi in ranges:
        for point in range(lo, hi + 1):
            assert normalise(f"mi{chr(point)}so") == "miso", hex(point)
    assert normalise("mi\u00a0so") == "mi so"  # a no-break space is a space, not ignorable


def test_it_leaves_values_under_two_characters_to_provenance():
    assert needle("X") is None
    assert needle(" x ") is None
    assert needle("xy") == "xy"
    assert needle("x.") is None  # its words are one character
    assert needle("Sir.  Biscuit!") == "sir biscuit"  # words joined by one space
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


# ---------------------------------------------------------------------------------------------
# F7.4 against a slow reference


def _reference_ignorable(char: str) -> bool:
    point = ord(char)
    return (
        point in (0x00AD, 0x034F, 0x061C, 0x3164, 0xFEFF, 0xFFA0)
        or 0x115F <= point <= 0x1160
        or 0x17B4 <= point <= 0x17B5
        or 0x180B <= point <= 0x180F
        or 0x200B <= point <= 0x200F
        or 0x202A <= point <= 0x202E
        or 0x2060 <= point <= 0x206F
        or 0xFE00 <= point <= 0xFE0F
        or 0x1BCA0 <= point <= 0x1BCA3
        or 0x1D173 <= point <= 0x1D17A
        or 0xE0000 <= point <= 0xE0FFF
    )


def _reference_fold(text: str) -> str:
    kept = "".join(c for c in text if not _reference_ignorable(c))
    return unicodedata.normalize("NFKC", kept).casefold()


def _is_word(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNM"


def _is_unspaced(char: str) -> bool:
    name = unicodedata.name(char, "")
    return name.startswith(("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR"))


def _runs(text: str) -> list[tuple[bool, str]]:
    """The text as its maximal runs of word characters and of other characters."""
    return [(w, "".join(group)) for w, group in itertools.groupby(text, key=_is_word)]


def reference(text: str, value: str) -> bool:
    """F7.4 read literally, by brute force over the runs of the text."""
    text, value = _reference_fold(text), _reference_fold(value)
    wanted = [run for w, run in _runs(value) if w]
    if not wanted:  # no word characters: the value as written, with no word character around
        value, text = " ".join(value.split()), " ".join(text.split())
        if len(value) < 2:
            return False
        return any(
            text[i : i + len(value)] == value
            and (i == 0 or not _is_word(text[i - 1]))
            and (i + len(value) == len(text) or not _is_word(text[i + len(value)]))
            for i in range(len(text) - len(value) + 1)
        )
    if len(" ".join(wanted)) < 2:
        return False
    words = [run for w, run in _runs(text) if w]
    anywhere = all(_is_unspaced(c) for c in "".join(wanted))
    k = len(wanted)
    for i in range(len(words) - k + 1):
        window = words[i : i + k]
        if not anywhere:
            if window == wanted:
                return True
        elif k == 1:
            if wanted[0] in window[0]:
                return True
        elif (
            window[0].endswith(wanted[0])
            and window[1:-1] == wanted[1:-1]
            and window[-1].startswith(wanted[-1])
        ):
            return True
    return False


ALPHABET = "aAbß -_.\u00ad\u200b\u2060\ufe0f\U000e0041\u0301\u0332Ａ小米"
strings = st.text(alphabet=ALPHABET, max_size=12)
values = st.text(alphabet=ALPHABET, min_size=1, max_size=6)


@settings(max_examples=2000, deadline=None)
@given(strings, values)
def test_it_agrees_with_a_slow_reference_on_random_spellings(text, value):
    """F7.4: separators, ignorables, combining marks, compatibility forms and an unspaced
    script, mixed at random, are matched as the rule read literally says."""
    assert mentions(text, value) is reference(text, value)


@settings(max_examples=500, deadline=None)
@given(strings, values)
def test_it_finds_a_value_whose_separators_are_spelled_otherwise(text, value):
    """F7.4: a value of words, set apart by spaces in any text, is found with each of its
    separators written as another one (its ignorables and marks kept as they are)."""
    if needle(value) is None or not any(_is_word(c) for c in _reference_fold(value)):
        return  # provenance only, or no words to spell otherwise
    spelled = "".join(
        c if _is_word(c) or _reference_ignorable(c) else "-_."[i % 3] for i, c in enumerate(value)
    )
    assert mentions(f"{text} {spelled} {text}", value)


@settings(max_examples=300, deadline=None)
@given(strings, st.lists(values, max_size=4))
def test_it_is_deterministic_and_its_values_order_free(text, several):
    """F7.4: the same values in any order give the same answer, again and again, and the
    answer is whether any one value is mentioned."""
    expected = any(reference(text, v) for v in several)
    assert matcher(several)(text) is expected
    assert matcher(reversed(several))(text) is expected
    assert matcher(sorted(several))(text) is matcher(several)(text) is expected
