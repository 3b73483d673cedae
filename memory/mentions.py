"""Whether a text mentions a forgotten value (SPEC F6 part 2, F7.4). Standard library only.

Both the text and the value are normalised the same way: Unicode's default-ignorable code
points dropped (soft hyphen, zero-width space and joiners, word joiner, bidirectional marks,
variation selectors: `IGNORABLE`), then ``casefold(NFKC(text))``. That is broader than the
matching of values (§1, NFC): full-width and other compatibility forms count as the same word,
while accents are kept ("Zoë" is not "Zoe").

Letters, digits and combining marks (categories L, N and M) are *word characters*; every other
character separates words. A value is mentioned when its words occur in the text as whole
words, one after the other, each run of separators between two of them in the value matching
any non-empty run of separators in the text: forgetting "Sir Biscuit" finds "Sir-Biscuit",
"sir_biscuit" and "Sir.  Biscuit", not "SirBiscuit" nor "Biscuit" alone. Separators before the
value's first word or after its last are not part of what is matched ("Miso!" finds "Miso").
"Whole words": no word character right before the first word or right after the last. In the
scripts written without spaces between words (Han, Hiragana, Katakana, Thai, Lao, Khmer,
Myanmar) a value whose word characters are all of such scripts is found wherever its words
occur. A value with no word character at all (emoji, punctuation) is matched as it is written,
with whitespace runs as one space and no word character around it.

A value shorter than `MIN_LENGTH` characters, as it is matched, is never matched by words: it
withholds through provenance alone.

Each value is compiled once into a pattern over the text's *word form* (`words`): its words
joined by single spaces, so a separator run of the text is one space there."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from memory.extract.text import key_slug

MIN_LENGTH = 2

# Unicode's default-ignorable code points (F7.4), as inclusive ranges.
IGNORABLE = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian variation selectors, vowel separator
    (0x200B, 0x200F),  # zero-width space, non-joiner, joiner, LRM, RLM
    (0x202A, 0x202E),  # bidirectional embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidirectional isolates
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero-width no-break space (byte order mark)
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement
)

# The blocks of the scripts written without spaces between words (F6).
_UNSPACED = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA9E0, 0xA9FF),  # Myanmar extended-B
    (0xAA60, 0xAA7F),  # Myanmar extended-A
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana (NFKC folds them, kept for safety)
    (0x20000, 0x323AF),  # CJK extensions B-H
)

_DROP = {point: None for lo, hi in IGNORABLE for point in range(lo, hi + 1)}
_SPACE = ord(" ")
_CACHED = 1 << 16  # at most this many characters' roles are remembered by the table


class _WordTable(dict):
    """The `str.translate` table of the word form: an ignorable is dropped, a word character
    stays, any other character becomes a space. Filled as characters are first met (bounded),
    so a text of known characters is translated without a Python call per character."""

    def __missing__(self, point: int):
        role = None if point in _DROP else point if _word_char(chr(point)) else _SPACE
        if len(self) < _CACHED:
            self[point] = role
        return role


_WORDS = _WordTable()


def _word_char(char: str) -> bool:
    """A letter, a digit or a combining mark (the characters a whole word may not touch)."""
    return unicodedata.category(char)[0] in "LNM"


def _unspaced(char: str) -> bool:
    point = ord(char)
    return any(lo <= point <= hi for lo, hi in _UNSPACED)


def _folded(text: str) -> str:
    """``casefold(NFKC(text))`` of `text` without its default-ignorable code points. The
    ignorables go first, so that one between a letter and its accent does not keep them
    apart. A text of ASCII alone is its own NFKC form and holds no ignorable: it is lowered."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text.translate(_DROP)).casefold()
    return folded.translate(_DROP)


def normalise(text: str) -> str:
    """``casefold(NFKC(text))`` of `text` without its default-ignorable code points, each run
    of whitespace as one space, stripped."""
    return " ".join(_folded(text).split())


def words(norm: str) -> str:
    """The word form of a normalised (or folded) text: its runs of word characters joined by
    one space (every run of other characters is one space; none before the first or after the
    last)."""
    return " ".join(norm.translate(_WORDS).split())


def needle(value: str) -> str | None:
    """What a value is matched by: its word form, or for a value without word characters its
    normalised form; None when that is under ``MIN_LENGTH`` characters."""
    norm = normalise(value)
    found = words(norm) or norm
    return found if len(found) >= MIN_LENGTH else None


def _anywhere(found: str) -> bool:
    """A value whose word characters are all of unspaced scripts matches wherever it occurs."""
    letters = [c for c in found if _word_char(c)]
    return bool(letters) and all(_unspaced(c) for c in letters)


def _literal_at(norm_text: str, literal: str) -> bool:
    """A value without word characters: occurs in the normalised text with no word character
    right before or right after it."""
    start = norm_text.find(literal)
    while start != -1:
        end = start + len(literal)
        before = norm_text[start - 1] if start > 0 else " "
        after = norm_text[end] if end < len(norm_text) else " "
        if not _word_char(before) and not _word_char(after):
            return True
        start = norm_text.find(literal, start + 1)
    return False


class _Compiled:
    """The patterns of a set of values, compiled once: one for the values matched as whole
    words and one for those of unspaced scripts, both over the text's word form, and the
    values without word characters, matched as written."""

    def __init__(self, values: Iterable[str]):
        whole, anywhere, self.literals = [], [], []
        for found in sorted({n for n in (needle(v) for v in values) if n is not None}):
            if not words(found):
                self.literals.append(found)
            else:
                (anywhere if _anywhere(found) else whole).append(re.escape(found))
        self.whole = re.compile(rf"(?<!\S)(?:{'|'.join(whole)})(?!\S)") if whole else None
        self.anywhere = re.compile("|".join(anywhere)) if anywhere else None

    def __call__(self, text: str) -> bool:
        if self.whole is None and self.anywhere is None and not self.literals:
            return False
        folded = _folded(text)
        form = words(folded)
        if (self.whole is not None and self.whole.search(form)) or (
            self.anywhere is not None and self.anywhere.search(form)
        ):
            return True
        norm = " ".join(folded.split()) if self.literals else ""
        return any(_literal_at(norm, literal) for literal in self.literals)


def mentions(text: str, value: str) -> bool:
    """Whether `text` mentions `value` as F6 and F7.4 count it."""
    return _Compiled([value])(text)


def matcher(values: Iterable[str]):
    """A function of a text that says whether it mentions any of `values` (compiled once, in
    an order of their own: the order of `values` does not matter). Values under
    ``MIN_LENGTH`` characters are left out (F6: provenance only)."""
    return _Compiled(values)


def record_matcher(values: Iterable[str]):
    """F7.2: a function of a memory's `(key, label, value)` that says whether it holds one of
    `values` as whole words — in its value or its label, by the same rule as messages, or in
    its key, compared with the value's slug as person and thing keys are made
    (`memory.extract.text.key_slug`: "Zoë" also finds `people.zoe.works_at`)."""
    values = list(values)
    in_text = matcher(values)
    in_key = matcher(s for s in (key_slug(v) for v in values) if s)

    def match(key: str, label: str | None, value: str | None) -> bool:
        return bool(value and in_text(value)) or bool(label and in_text(label)) or in_key(key)

    return match
