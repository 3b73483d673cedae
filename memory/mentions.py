"""Whether a text mentions a forgotten value (SPEC F6, part 2). Standard library only.

Both the text and the value are normalised as ``casefold(NFKC(text))`` with each run of
whitespace as one space: broader than the matching of values (§1, NFC), so full-width and
other compatibility forms count as the same word, while accents are kept ("Zoë" is not
"Zoe"). A value is mentioned when it occurs as whole words: no letter or digit right before
or right after it. In the scripts written without spaces between words (Han, Hiragana,
Katakana, Thai, Lao, Khmer, Myanmar) a value made of such characters is mentioned wherever it
occurs. A value shorter than 2 characters (after normalisation) is never matched by words:
it withholds through provenance alone.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from memory.extract.text import key_slug

MIN_LENGTH = 2

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

_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """``casefold(NFKC(text))`` with each run of whitespace as one space, stripped."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _unspaced(char: str) -> bool:
    point = ord(char)
    return any(lo <= point <= hi for lo, hi in _UNSPACED)


def _word_char(char: str) -> bool:
    """A letter or a digit (the characters a whole word may not touch)."""
    return unicodedata.category(char)[0] in "LN"


def needle(value: str) -> str | None:
    """The normalised form a value is matched by, or None when it is too short to match by
    words (under ``MIN_LENGTH`` characters)."""
    norm = normalise(value)
    return norm if len(norm) >= MIN_LENGTH else None


def _anywhere(norm_value: str) -> bool:
    """A value written only in unspaced scripts (spaces aside) matches wherever it occurs."""
    letters = [c for c in norm_value if _word_char(c)]
    return bool(letters) and all(_unspaced(c) for c in letters)


def mentions_normalised(norm_text: str, norm_value: str) -> bool:
    """Whether the normalised text holds the normalised value as whole words (see the module
    docstring). Both must already be normalised with `normalise`."""
    if not norm_value:
        return False
    anywhere = _anywhere(norm_value)
    start = norm_text.find(norm_value)
    while start != -1:
        if anywhere:
            return True
        end = start + len(norm_value)
        before = norm_text[start - 1] if start > 0 else ""
        after = norm_text[end] if end < len(norm_text) else ""
        if not (before and _word_char(before)) and not (after and _word_char(after)):
            return True
        start = norm_text.find(norm_value, start + 1)
    return False


def mentions(text: str, value: str) -> bool:
    """Whether `text` mentions `value` as F6 counts it."""
    found = needle(value)
    return found is not None and mentions_normalised(normalise(text), found)


def matcher(values: Iterable[str]):
    """A function of a text that says whether it mentions any of `values` (each normalised
    once). Values under ``MIN_LENGTH`` characters are left out (F6: provenance only)."""
    needles = sorted({n for n in (needle(v) for v in values) if n is not None})

    def match(text: str) -> bool:
        if not needles:
            return False
        norm = normalise(text)
        return any(mentions_normalised(norm, n) for n in needles)

    return match


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
