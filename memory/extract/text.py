"""Text preparation, sentence and clause splitting, slugs and value cleaning for the
extractor (SPEC §8). Offsets always stay those of the original text."""

from __future__ import annotations

import re
import unicodedata

from memory.domain import VALUE_MAX

from .keys import _MAX_SLUG, _RESERVED_THINGS
from .words import (
    _NAME_BAD_FIRST,
    _NON_ROLE,
    _PLACE_BAD_FIRST,
    _PREF_BAD_FIRST,
    _PRONOUNS,
    _STOP_SUBJECTS,
    _c,
)

# ---------------------------------------------------------------------------------------------
# Text preparation and splitting

_CHAR_MAP = str.maketrans(
    {
        "\u2019": "'",
        "\u2018": "'",
        "\u02bc": "'",
        "\u2032": "'",
        "\uff07": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u00a0": " ",
        "\u2007": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u202f": " ",
        "\u3000": " ",
        "\t": " ",
        "\r": "\n",
        "\u2028": "\n",
        "\u2029": "\n",
        "\x0b": "\n",
        "\x0c": "\n",
        "\x85": "\n",
    }
)
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)


def _prepare(text: str) -> str:
    """Same length as `text`: spans stay offsets into the caller's string."""
    text = text.translate(_CHAR_MAP)
    return _FENCE.sub(lambda m: "\n" * len(m.group(0)), text)


_SENT_END = re.compile(
    r"[.!?\u2026]+[\"')\]]*(?=\s|$)|[\n;\u3002\uff01\uff1f\uff1b]", re.IGNORECASE
)
_ABBREV = frozenset(
    "mr mrs ms dr st mt jr sr prof rev gen col capt lt sgt vs e.g i.e approx".split()
)
_ABBREV_BEFORE = re.compile(r"([\w.]+)\.$")
# `(?<!\s)`: only try at the start of a whitespace run (no quadratic scans of long runs).
_HARD_SPLIT = _c(r"(?<!\s)(?:\s*,\s*and\s+|(?:\s*,)?\s+but\s+)")
_SOFT_SPLIT = _c(r"(?<!\s)(?:\s*,\s*|\s+and\s+)")
_MAX_SOFT_PIECES = 32  # beyond this, a clause is read whole (keeps extract() linear)


def _sentences(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END.finditer(text):
        if m.group(0) == ".":
            before = _ABBREV_BEFORE.search(text[max(start, m.start() - 12) : m.end()])
            if before and before.group(1).lower() in _ABBREV:
                continue
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return out


def _pieces(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = start
    for m in pattern.finditer(text, start, end):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, end))
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# ---------------------------------------------------------------------------------------------
# Slugs and value cleaning


def key_slug(words: str) -> str:
    """The slug a key is made of for `words` ("Zoë" → "zoe", "Sir Biscuit" → "sir_biscuit"), or
    "" when nothing of it is left or it is too long: person and thing keys are made by it, and
    a forget compares keys with a purged value's slug by it (SPEC F7.2)."""
    folded = unicodedata.normalize("NFKD", words).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9-]+", "_", folded.lower().replace("'", "")).strip("_-")
    return slug if 0 < len(slug) <= _MAX_SLUG else ""


def _thing_slug(np: str) -> str:
    words = np.split()
    if words and words[0].lower() == "new" and len(words) > 1:
        words = words[1:]
    if not 1 <= len(words) <= 4 or any(w.lower() in _STOP_SUBJECTS - _THING_OK for w in words):
        return ""
    slug = key_slug(" ".join(words))
    return "" if slug in _RESERVED_THINGS else slug


# Nouns the subject stop list refuses as people but that are fine as things ("my dog").
_THING_OK = frozenset("plant dog cat pet baby boss kid kids family".split())


def _person_slug(name: str) -> str:
    if name.lower() in _STOP_SUBJECTS:
        return ""
    return key_slug(name)


_CONTRAST = _c(
    r"(?:\s*,\s*|\s+)(?:(?:and|but)\s+)?(?:not(?!\s+(?:far|too|very|so|that|quite|much|only|"
    r"just|really|sure|exactly|yet|even|always|on|in|at)\b)|instead\s+of|rather\s+than)\s+\S"
)
_AUX_BEFORE_NOT = frozenset(
    "is are was were am be do does did can could will would should have has had may might must "
    "it's that's i'm why".split()
)
_CUTS = {
    "name": _c(r"\s*,|\s+(?:because|since|so|when|if|who|which)\b"),
    "place": _c(
        r"\s*,?\s+(?:because|since|with|where|which|who|so|for|when|while|until|after|before|"
        r"as|to|and\s+(?=(?:i|i'm|i've|work|works|live|lives|moved|my)\b))\b"
    ),
    "pref": _c(r"\s*,?\s+(?:because|since)\b|\s*,\s*(?:so|which)\b"),
    "role": _c(r"\s*,|\s+(?:because|since|who|which|and\s+(?=(?:i|she|he|they|lives|works)\b))\b"),
}
_TIME_TAIL = _c(
    r"\s+(?:(?:last|this|next)\s+(?:week|weekend|month|year|spring|summer|fall|autumn|winter)|"
    r"yesterday|today|recently|lately|(?:(?:a\s+few|a\s+couple(?:\s+of)?|several|some|\d+|a|an|"
    r"two|three|few)\s+)?(?:days?|weeks?|months?|years?)\s+ago|in\s+\d{4}|a\s+while\s+(?:ago|back))$"
)
_FILLER_TAIL = _c(
    r"(?:\s*,\s*|\s+)(?:now|again|anymore|any\s+more|too|as\s+well|also|though|anyway|anyways|"
    r"lol|haha+|please|these\s+days|nowadays|for\s+now|already|still|right\s+now|currently|"
    r"honestly|at\s+the\s+moment|ok|okay)$"
)
_TRAIL_PO = frozenset(".,!?;:'\"*\u2026\u3002\u3001\uff01\uff1f\uff61\u00a1\u00bf")
_LEAD_STRIP = frozenset("\"'([{*_~,;:!?\u00ab\u00bb\u201c\u201d\u2018\u2019`")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _strip_edges(v: str) -> str:
    i, j = 0, len(v)
    while i < j and (
        v[i].isspace() or v[i] in _LEAD_STRIP or unicodedata.category(v[i]) in ("Pi", "Ps")
    ):
        i += 1
    while j > i:
        c = v[j - 1]
        cat = unicodedata.category(c)
        if (
            c.isspace()
            or c in _TRAIL_PO
            or cat in ("Pi", "Pf", "Pd", "Ps", "So", "Sk", "Cf", "Cc", "Zs")
            or c in "\ufe0f\ufe0e"
        ):
            j -= 1
        elif cat == "Pe" and _CLOSERS.get(c, "\0") not in v[i : j - 1]:
            j -= 1
        else:
            break
    return v[i:j]


def _cut_contrast(v: str) -> tuple[str, bool]:
    """Cut a contrast tail ("X, not Y", "X rather than Y"): the value is what comes before it.
    A "not" right after an auxiliary ("it is not", "I'm not") is the statement itself, not a
    contrast, and one at the very start is no tail. Returns (value, whether a tail was cut)."""
    for m in _CONTRAST.finditer(v):
        if m.start() == 0:
            continue
        before = v[max(0, m.start() - 20) : m.start()].split()
        if before and before[-1].lower() in _AUX_BEFORE_NOT:
            continue
        return v[: m.start()], True
    return v, False


def _strip_tails(v: str, kind: str) -> str:
    """Strip edge punctuation and filler tails ("now", "lol"), and for a place a time tail
    ("last year"), until nothing changes (at most 20 rounds)."""
    previous = None
    for _ in range(20):
        if previous == v:
            break
        previous = v
        v = _strip_edges(v)
        v = _FILLER_TAIL.sub("", v)
        if kind == "place":
            v = _TIME_TAIL.sub("", v)
    return v


def _bad_name(v: str, words: list[str], first: str) -> bool:
    return len(words) > 5 or first in _NAME_BAD_FIRST


def _bad_place(v: str, words: list[str], first: str) -> bool:
    return first in _PLACE_BAD_FIRST or v.lower() in _PRONOUNS


def _bad_pref(v: str, words: list[str], first: str) -> bool:
    return first in _PREF_BAD_FIRST or v.lower() in _PRONOUNS


def _bad_role(v: str, words: list[str], first: str) -> bool:
    """A role is judged by its head noun ("teacher" of "teacher at the school")."""
    head = re.split(r"\s+(?:of|at|for|in|with|from|on)\s+", v, maxsplit=1, flags=re.I)[0]
    return len(words) > 8 or head.split()[-1].lower() in _NON_ROLE or first in _PRONOUNS


# What each kind of value rejects after cleaning (its first word, its length, a pronoun).
_REJECTS = {"name": _bad_name, "place": _bad_place, "pref": _bad_pref, "role": _bad_role}


def _clean(raw: str, kind: str) -> tuple[str | None, bool]:
    """Clean a captured value. Returns (value or None, whether a contrast tail was cut)."""
    v, contrast = _cut_contrast(" ".join(raw.split()))
    cut = _CUTS[kind].search(v)
    if cut and cut.start() > 0:
        v = v[: cut.start()]
    if len(v) > VALUE_MAX + 100:  # fillers and punctuation cannot bring it under the limit
        return None, contrast
    v = unicodedata.normalize("NFC", _strip_tails(v, kind)).strip()
    if not v or len(v) > VALUE_MAX:
        return None, contrast
    words = v.split()
    if _REJECTS[kind](v, words, words[0].lower()):
        return None, contrast
    return v, contrast


def _looks_proper(value: str, whole: str) -> bool:
    """A bare "It is X" names something only if X looks like a name: capitalised (or caseless,
    e.g. CJK), unless the speaker writes everything in lowercase."""
    c = value[0]
    if c.isupper() or (c.isalpha() and c.lower() == c.upper()):
        return True
    return not any(ch.isupper() for ch in whole)
