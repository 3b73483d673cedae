"""Rule-based fact extraction and question matching (SPEC §8).

Standard library only (like `memory.domain`): no Django, no clock, no I/O, so every rule is
testable as a table. The caller (turn creation, `POST /memory/remember`, `GET /memory/ask`)
turns the results into asserts/corrections and key lookups.

How a message is read
---------------------
1. Curly quotes and odd spaces are mapped one character to one character (so offsets stay
   those of the original text) and ```fenced code``` is blanked out (ignored).
2. The text is split into sentences (``.``/``!``/``?`` followed by a space or the end, ``;``,
   newlines; "Dr."/"St."-style abbreviations and "3.5" do not end a sentence), then into
   clauses at ", and" and "but". A comma or a bare " and " also splits, but only when the
   part after it is a fact on its own ("Don't call me boss, call me Sam"; "I like jazz and
   Priya works at Acme") — so "Portland, Oregon" and "Salt and Pepper" stay whole.
3. Each clause is matched against the rules below, most specific first; the first rule whose
   pattern matches *claims* the clause (so "I dislike being called boss" is only an avoided
   nickname and "don't call me boss" never becomes a preferred name), giving at most one
   extraction per clause. Rules are anchored at the start of the clause (after discourse
   markers such as "actually", "oh", "so", "please"), so subject-less clauses ("works at
   google"), negated ones ("I don't live in Boston anymore") and pronoun subjects yield
   nothing.

Decisions taken here (SPEC §8 is silent on them)
------------------------------------------------
- `correction` is only ever set on single-valued keys. For `many` keys (likes, dislikes,
  avoided nicknames) a new value is a new value slot, so "Actually, I like jazz" or "I like
  jazz, not rock" is a plain `likes` fact; correcting one value with another would be wrong.
- Correction markers: the word "actually" in the clause, a contrast tail (", not Harbor",
  "instead of …", "rather than …"), "renamed"/"changed … name to"/"new name", and — after
  "I renamed it / the basil plant" — any later naming of that thing in the same message.
- "it" is resolved to `last_named_key` (or to the thing named or renamed earlier in the same
  message). Only "it"/"its" is resolved, except right after a rename, where "he"/"she" also
  refer to the renamed thing ("I renamed my dog. He is Max now."). Without a "named/called"
  verb, "It is X" only counts as a name after a rename or with a contrast ("It is Marlowe now,
  not Harbor"), and X must look like a proper name (capitalised, unless the whole message is
  lowercase).
- `is_thing_name_key` excludes `user.*` and `people.*`: a person is never "it".
- Role values keep everything after the article ("a designer at Acme" → "designer at Acme");
  roles whose head noun is plainly not a job ("Boston is a great city", "Rex is a good boy")
  are refused. A one-word person name may be introduced by a relation ("my friend Priya works
  at Acme" → `people.priya.works_at`); "my sister works at Acme" yields nothing.
- "I like to read" keeps "to read"; "I hate it when you rush me" keeps "when you rush me";
  "I love you" / "I like it" yield nothing.
- Trailing time phrases are dropped from places and employers ("I moved to Seattle last
  year" → "Seattle"); so are trailing clauses ("… because", "… with my wife", "… as a
  designer").
- Identical facts repeated in one message are reported once (the first, with `correction`
  set if any repetition was a correction).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from memory.domain import VALUE_MAX, valid_key

__all__ = [
    "ANSWERS",
    "NAME_KEY_SUFFIX",
    "Extraction",
    "extract",
    "is_thing_name_key",
    "question_key",
]

NAME_KEY_SUFFIX = ".name"

KEY_PREFERRED_NAME = "user.preferred_name"
KEY_AVOID_NICKNAME = "user.avoid_nickname"
KEY_LIKES = "user.likes"
KEY_DISLIKES = "user.dislikes"
KEY_LIVES_IN = "user.lives_in"
KEY_WORKS_AT = "user.works_at"

# Keys the extractor produces that are `many` in the seeded registry (SPEC §1, §8).
MANY_KEYS = frozenset({KEY_LIKES, KEY_DISLIKES, KEY_AVOID_NICKNAME})

_RESERVED_THINGS = frozenset({"user", "people", "name"})
_MAX_SLUG = 60


@dataclass(frozen=True, slots=True)
class Extraction:
    key: str  # e.g. "basil_plant.name", "user.likes", "people.priya.works_at"
    value: str  # cleaned value, speaker's case kept
    correction: bool  # an explicit correction ("renamed", "not X", "actually")
    span: tuple[int, int]  # offsets of the clause it came from (debugging)


def is_thing_name_key(key: str | None) -> bool:
    """True for `<thing>.name` keys (`basil_plant.name`, `dog.name`), false for `user.*` and
    `people.*` keys: the caller uses it to find the user's most recently named thing."""
    if not key or not valid_key(key) or not key.endswith(NAME_KEY_SUFFIX):
        return False
    head = key[: -len(NAME_KEY_SUFFIX)]
    return bool(head) and head.split(".")[0] not in ("user", "people")


# ---------------------------------------------------------------------------------------------
# Word lists

_PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself we us our ours ourselves they them their theirs themselves this "
    "that these those".split()
)

# A people-rule subject must not be one of these (SPEC §8: pronouns never become subjects).
_STOP_SUBJECTS = _PRONOUNS | frozenset(
    """
    there here who whom whose what which where when why how everyone everybody everything
    someone somebody something anyone anybody anything nobody noone nothing none one all both
    each some many most few a an the and or but so if then also actually now just well oh yes
    yeah yep no nope not ok okay please thanks thank hello hi hey today tomorrow yesterday
    tonight life time work home love weather world nature music coffee tea rain morning
    mornings night evening plant dog cat pet user people person guy man woman lady kid kids
    baby family god sir madam mister miss boss let lets is was are were be been being do does
    did has have had will would can could should may might must works lives moved like likes
    loves call name mine ours named called renamed hate hates at to in on of for from with by
    as into about anymore again too not never
    """.split()
)

_RELATIONS = (
    r"(?:best\s+)?(?:friend|sister|brother|mom|mum|mother|dad|father|wife|husband|partner|"
    r"coworker|co-worker|colleague|cousin|aunt|uncle|roommate|flatmate|neighbou?r|son|"
    r"daughter|girlfriend|boyfriend|fiancée?|grandma|grandpa|grandmother|grandfather|niece|"
    r"nephew|manager|boss|teacher|mentor|buddy|pal|stepmom|stepdad|sibling)"
)

# First words that show a "name" is not a name ("call me tomorrow", "named after grandma").
_NAME_BAD_FIRST = _PRONOUNS | frozenset(
    """
    a an the when whenever if at after before back later tomorrow tonight today soon sometime
    anytime maybe again crazy now in on by for with from to up out please what whatever
    anything something not never right old-fashioned silly paranoid asap around once twice
    every any because since so but and or as very too really just is are was were named called
    renamed do does don't
    """.split()
)

_FUNCTION_WORDS = frozenset(
    "is are was were am be at in on of and or but not now anymore again named called renamed "
    "don't do does".split()
)
_PLACE_BAD_FIRST = _FUNCTION_WORDS | frozenset(
    "with together here there it that this them him her me myself yourself you us to".split()
)

_PREF_BAD_FIRST = _FUNCTION_WORDS | frozenset("it you him her them me us".split())

# Head nouns that are plainly not a role ("Boston is a great city").
_NON_ROLE = frozenset(
    """
    city town village place country state area day night week thing time idea lot bit mess
    joke problem question pain nightmare dream movie film book song game show word dog cat
    puppy kitten pet bird fish plant tree flower boy girl baby sweetheart sweetie gem
    treasure friend fan name one person human angel saint legend star hero genius
    """.split()
)

# Words between the subject and the verb that belong to neither ("Priya now works at Acme").
_ADV = (
    r"(?:(?:now|just|recently|really|also|still|currently|finally|actually|truly|totally|"
    r"absolutely|definitely|honestly|already|officially|genuinely|seriously|literally|mostly|"
    r"so|kinda|kind\s+of|sort\s+of|do|does|did)\s+)*"
)

# A word: letters first, then letters/digits/hyphens, or an inner apostrophe before two more
# letters ("O'Brien", but "Dana's" stops at "Dana").
_W = r"[^\W\d_](?:[\w-]|'(?=[^\W\d_]{2}))*"
_NP = rf"{_W}(?:\s+{_W}){{0,3}}?"
_DET = r"(?:the|my|our)"
_I = r"i\b\s*"  # "I like", "I'd …", "I've …", "i'm …"


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


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
_ABBREV = frozenset("mr mrs ms dr st mt jr sr prof rev gen col capt lt sgt vs e.g i.e approx".split())
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


def _slug(words: str) -> str:
    folded = unicodedata.normalize("NFKD", words).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9-]+", "_", folded.lower().replace("'", "")).strip("_-")
    return slug if 0 < len(slug) <= _MAX_SLUG else ""


def _thing_slug(np: str) -> str:
    words = np.split()
    if words and words[0].lower() == "new" and len(words) > 1:
        words = words[1:]
    if not 1 <= len(words) <= 4 or any(w.lower() in _STOP_SUBJECTS - _THING_OK for w in words):
        return ""
    slug = _slug(" ".join(words))
    return "" if slug in _RESERVED_THINGS else slug


# Nouns the subject stop list refuses as people but that are fine as things ("my dog").
_THING_OK = frozenset("plant dog cat pet baby boss kid kids family".split())


def _person_slug(name: str) -> str:
    if name.lower() in _STOP_SUBJECTS:
        return ""
    return _slug(name)


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
    while i < j and (v[i].isspace() or v[i] in _LEAD_STRIP
                     or unicodedata.category(v[i]) in ("Pi", "Ps")):
        i += 1
    while j > i:
        c = v[j - 1]
        cat = unicodedata.category(c)
        if c.isspace() or c in _TRAIL_PO or cat in ("Pi", "Pf", "Pd", "Ps", "So", "Sk", "Cf",
                                                      "Cc", "Zs") or c in "\ufe0f\ufe0e":
            j -= 1
        elif cat == "Pe" and _CLOSERS.get(c, "\0") not in v[i : j - 1]:
            j -= 1
        else:
            break
    return v[i:j]


def _clean(raw: str, kind: str) -> tuple[str | None, bool]:
    """Clean a captured value. Returns (value or None, whether a contrast tail was cut)."""
    v = " ".join(raw.split())
    contrast = False
    for m in _CONTRAST.finditer(v):
        if m.start() == 0:
            continue
        before = v[max(0, m.start() - 20) : m.start()].split()
        if before and before[-1].lower() in _AUX_BEFORE_NOT:
            continue
        v, contrast = v[: m.start()], True
        break
    cut = _CUTS[kind].search(v)
    if cut and cut.start() > 0:
        v = v[: cut.start()]
    if len(v) > VALUE_MAX + 100:  # fillers and punctuation cannot bring it under the limit
        return None, contrast
    previous = None
    for _ in range(20):
        if previous == v:
            break
        previous = v
        v = _strip_edges(v)
        v = _FILLER_TAIL.sub("", v)
        if kind == "place":
            v = _TIME_TAIL.sub("", v)
    v = unicodedata.normalize("NFC", v).strip()
    if not v or len(v) > VALUE_MAX:
        return None, contrast
    words = v.split()
    first = words[0].lower()
    if kind == "name":
        if len(words) > 5 or first in _NAME_BAD_FIRST:
            return None, contrast
    elif kind == "place":
        if first in _PLACE_BAD_FIRST or v.lower() in _PRONOUNS:
            return None, contrast
    elif kind == "pref":
        if first in _PREF_BAD_FIRST or v.lower() in _PRONOUNS:
            return None, contrast
    elif kind == "role":
        head = re.split(r"\s+(?:of|at|for|in|with|from|on)\s+", v, maxsplit=1, flags=re.I)[0]
        if len(words) > 8 or head.split()[-1].lower() in _NON_ROLE or first in _PRONOUNS:
            return None, contrast
    return v, contrast


def _looks_proper(value: str, whole: str) -> bool:
    """A bare "It is X" names something only if X looks like a name: capitalised (or caseless,
    e.g. CJK), unless the speaker writes everything in lowercase."""
    c = value[0]
    if c.isupper() or (c.isalpha() and c.lower() == c.upper()):
        return True
    return not any(ch.isupper() for ch in whole)


# ---------------------------------------------------------------------------------------------
# Clause rules


@dataclass(frozen=True, slots=True)
class _State:
    referent: str | None  # key of the thing "it" refers to
    renaming: bool  # a rename was announced earlier in this message


@dataclass(frozen=True, slots=True)
class _Cand:
    key: str
    value: str
    correction: bool


_MARKERS = _c(
    r"(?:(?:actually|oh\s+and|oh|well|so|also|and|but|anyway|anyways|btw|by\s+the\s+way|fyi|"
    r"ok|okay|yes|yeah|yep|no|nope|hey|hi|hello|um+|uh+|hmm+|plus|then|just\s+so\s+you\s+know|"
    r"for\s+the\s+record|correction|update|sorry|ah|oops|please|ps)\b[\s,:!.-]*)+"
)
_ACTUALLY = _c(r"\b(?:actually|correction)\b")

# Renames.
_RENAME = _c(rf"(?:i|we)\b\s*{_ADV}(?:have\s+|'ve\s+)?(?:renamed|re-named)\s+(?P<rest>.+)")
_RENAME_IT = _c(r"(?:it|him|her)\b\s*(?:(?:to|as)\s+)?(?P<v>.*)")
_RENAME_NP = _c(rf"{_DET}\s+(?P<body>.+)")
_TO_AS = _c(r"\s+(?:to|as)\s+")
_CHANGED_NAME = _c(
    rf"(?:i|we)\b\s*{_ADV}(?:have\s+|'ve\s+)?changed\s+(?:(?P<it>its)|{_DET}\s+(?P<np>{_NP})'s?)"
    r"\s+name\s+to\s+(?P<v>.+)"
)

# "it" naming (needs a referent).
_IT_NAME_IS = _c(r"(?:its|it's)\s+(?P<new>new\s+)?name\s+(?:is|'s)\s+(?:now\s+|actually\s+)*(?P<v>.+)")
_IT_NAMED = _c(
    rf"it(?:\s+is|'s|\s+was|\s+has\s+been)\s+{_ADV}(?P<verb>named|called|renamed(?:\s+to)?)"
    r"\s+(?P<v>.+)"
)
_IT_IS = _c(rf"(?P<pro>it|he|she)(?:\s+is|'s)\s+{_ADV}(?P<v>.+)")

# Avoided nicknames, preferred names.
_AVOID_CALL = _c(r"(?:do\s+not|don't|dont|never|stop|quit)\s+(?:ever\s+)?call(?:ing)?\s+me\s+(?P<v>.+)")
_AVOID_BEING = _c(
    rf"{_I}{_ADV}(?:dislike|hate|detest|loathe|despise|can't\s+stand|cannot\s+stand|"
    r"don't\s+like|dont\s+like|do\s+not\s+like|don't\s+enjoy|do\s+not\s+enjoy|don't\s+want|"
    r"dont\s+want|do\s+not\s+want|'d\s+rather\s+not|would\s+rather\s+not|prefer\s+not|"
    r"'d\s+prefer\s+not|would\s+prefer\s+not)\s+"
    r"(?:being\s+called|it\s+when\s+(?:you|people)\s+call\s+me|when\s+(?:you|people)\s+call\s+me|"
    r"being\s+referred\s+to\s+as|(?:to\s+)?be\s+called)\s+(?P<v>.+)"
)
_CALL_ME = _c(
    r"(?:(?:you\s+(?:can|may|should|could)|feel\s+free\s+to|i\s+(?:want|'d\s+like|would\s+like)"
    r"\s+you\s+to|(?:can|could|would|will)\s+you)\s+)?(?:just\s+|always\s+)?call\s+me\s+(?P<v>.+)"
)
_MY_NAME = _c(r"my\s+(?:preferred\s+|real\s+)?name(?:\s+is|'s)\s+(?:now\s+|actually\s+|really\s+)*(?P<v>.+)")
_GO_BY = _c(
    rf"{_I}{_ADV}(?:go\s+by|prefer\s+to\s+be\s+called|prefer\s+being\s+called|"
    r"like\s+to\s+be\s+called|like\s+being\s+called|love\s+being\s+called|want\s+to\s+be\s+called|"
    r"'d\s+like\s+to\s+be\s+called|would\s+like\s+to\s+be\s+called|'d\s+prefer\s+to\s+be\s+called|"
    r"would\s+prefer\s+to\s+be\s+called|'d\s+rather\s+be\s+called|would\s+rather\s+be\s+called)"
    r"\s+(?P<v>.+)"
)

# Naming things.
_THING_POSS = _c(
    rf"{_DET}\s+(?P<np>{_NP})\s*'s?\s+(?P<new>new\s+)?name(?:\s+is|'s)\s+(?:now\s+|actually\s+)*"
    r"(?P<v>.+)"
)
_THING_NAMED = _c(
    rf"{_DET}\s+(?P<np>{_NP})(?:\s+(?:is|was|has\s+been)|'s)\s+{_ADV}"
    r"(?P<verb>named|called|renamed(?:\s+to)?)\s+(?P<v>.+)"
)
_HAVE_A_NAMED = _c(
    rf"{_I}(?:have|'ve\s+got|have\s+got|got|adopted|bought|own)\s+(?:a|an)\s+(?P<np>{_NP})"
    r"\s+(?:named|called)\s+(?P<v>.+)"
)

# The user's own facts.
_USER_LIVES = _c(
    rf"{_I}{_ADV}(?:live|'ve\s+{_ADV}moved|have\s+{_ADV}moved|moved|relocated|'ve\s+relocated|"
    rf"have\s+relocated|(?:'m|am)\s+{_ADV}(?:living|based))\s+(?:back\s+|over\s+|out\s+)?"
    r"(?:in|to|at)\s+(?P<v>.+)"
)
_USER_WORKS = _c(
    rf"{_I}{_ADV}(?:work|(?:'m|am)\s+{_ADV}(?:working|employed)|started\s+working|"
    r"got\s+a\s+(?:new\s+)?job|have\s+a\s+(?:new\s+)?job|'ve\s+got\s+a\s+(?:new\s+)?job)"
    r"\s+(?:at|for)\s+(?P<v>.+)"
)
_USER_DISLIKES = _c(
    rf"{_I}{_ADV}(?:dislike|hate|detest|loathe|despise|can't\s+stand|cannot\s+stand|"
    r"can\s+not\s+stand|don't\s+like|dont\s+like|do\s+not\s+like|don't\s+enjoy|do\s+not\s+enjoy|"
    r"(?:'m|am)\s+not\s+(?:a\s+(?:big\s+)?fan\s+of|fond\s+of|into))\s+(?P<v>.+)"
)
_USER_LIKES = _c(
    rf"{_I}{_ADV}(?:like|love|enjoy|adore|(?:'m|am)\s+{_ADV}(?:a\s+(?:big\s+|huge\s+)?fan\s+of|"
    r"fond\s+of|into))\s+(?P<v>.+)"
)

# Other people (a one-word name, optionally introduced by a relation: "my friend Priya").
_SUBJ = (
    rf"(?:(?:my|our)\s+{_RELATIONS}\s+|(?:dr|mr|mrs|ms|mx|prof|aunt|uncle)\.?\s+)?"
    rf"(?P<name>{_W})\b"
)
_PEOPLE_LIVES = _c(
    rf"{_SUBJ}(?:\s+{_ADV}(?:lives|has\s+{_ADV}moved|moved|relocated|has\s+relocated|"
    rf"is\s+{_ADV}(?:living|based))|'s\s+{_ADV}(?:moved|living|based))\s+"
    r"(?:back\s+|over\s+|out\s+)?(?:in|to|at)\s+(?P<v>.+)"
)
_PEOPLE_WORKS = _c(
    rf"{_SUBJ}(?:\s+{_ADV}(?:works|is\s+{_ADV}(?:working|employed)|started\s+working|"
    rf"got\s+a\s+(?:new\s+)?job|has\s+a\s+(?:new\s+)?job)|'s\s+{_ADV}(?:working|employed))"
    r"\s+(?:at|for)\s+(?P<v>.+)"
)
_PEOPLE_ROLE = _c(
    rf"{_SUBJ}(?:\s+(?:is|became|has\s+become|works\s+as)|'s)\s+{_ADV}(?:a|an)\s+(?P<v>.+)"
)


def _with_referent(state: _State, key: str | None) -> _State:
    return replace(state, referent=key) if key else state


def _rename_target(np: str | None, it: str | None, state: _State) -> str | None:
    if it is not None:
        return state.referent
    slug = _thing_slug(np or "")
    return f"{slug}{NAME_KEY_SUFFIX}" if slug else None


def _rule_rename(s: str, state: _State, whole: str) -> tuple[_Cand | None, _State] | None:
    m = _RENAME.fullmatch(s)
    if not m:
        return None
    rest = m.group("rest").strip()
    it: str | None = None
    np: str | None = None
    value: str | None = None
    if (pronoun := _RENAME_IT.fullmatch(rest)) is not None:
        it, value = "it", pronoun.group("v") or None
    elif (phrase := _RENAME_NP.fullmatch(rest)) is not None:
        body = phrase.group("body")
        to = _TO_AS.search(body)
        if to is not None:
            np, value = body[: to.start()], body[to.end():]
        else:
            np, value = _split_np_value(body, state)
    else:
        return None, replace(state, renaming=True)
    key = _rename_target(np, it, state)
    new_state = replace(_with_referent(state, key), renaming=True)
    if key is None or value is None:
        return None, new_state
    cleaned, _ = _clean(value, "name")
    if cleaned is None:
        return None, new_state
    return _Cand(key, cleaned, True), new_state


def _split_np_value(words_text: str, state: _State) -> tuple[str, str | None]:
    """"the basil plant Marlowe" has no "to": split the noun phrase from the new name.
    A known thing's slug as a prefix wins; else a trailing run of capitalised words after a
    lowercase one; else it is all noun phrase (no value)."""
    words = words_text.split()
    if state.referent and is_thing_name_key(state.referent):
        known = state.referent[: -len(NAME_KEY_SUFFIX)]
        for k in range(1, min(len(words), 5)):
            if _thing_slug(" ".join(words[:k])) == known:
                return " ".join(words[:k]), " ".join(words[k:])
    k = len(words)
    while k > 0 and words[k - 1][:1].isupper():
        k -= 1
    if 0 < k < len(words) and words[k - 1][:1].islower():
        return " ".join(words[:k]), " ".join(words[k:])
    return words_text, None


def _rule_changed_name(s: str, state: _State, whole: str) -> tuple[_Cand | None, _State] | None:
    m = _CHANGED_NAME.fullmatch(s)
    if not m:
        return None
    key = _rename_target(m.group("np"), m.group("it"), state)
    new_state = replace(_with_referent(state, key), renaming=True)
    cleaned, _ = _clean(m.group("v"), "name")
    if key is None or cleaned is None:
        return None, new_state
    return _Cand(key, cleaned, True), new_state


def _rule_it(s: str, state: _State, whole: str) -> tuple[_Cand | None, _State] | None:
    """"its name is X", "it is called X", and "It is Marlowe now, not Harbor" (SPEC §8)."""
    m = _IT_NAME_IS.fullmatch(s)
    explicit = m is not None
    new = bool(m and m.group("new"))
    if m is None:
        m = _IT_NAMED.fullmatch(s)
        explicit = m is not None
        new = bool(m and m.group("verb").lower().startswith("renamed"))
    if m is None:
        m = _IT_IS.fullmatch(s)
        if m is None:
            return None
        if m.group("pro").lower() != "it" and not state.renaming:
            return None  # "She is a designer": not about the named thing
    key = state.referent
    if key is None:
        return None, state  # "it" cannot be resolved: nothing for this clause
    value, contrast = _clean(m.group("v"), "name")
    if value is None:
        return None, state
    if not explicit and not (state.renaming or contrast):
        return None, state
    if not explicit and not _looks_proper(value, whole):
        return None, state
    correction = new or contrast or state.renaming or bool(_ACTUALLY.search(s))
    return _Cand(key, value, correction), state


def _rule_thing(s: str, state: _State, whole: str) -> tuple[_Cand | None, _State] | None:
    m = _THING_POSS.fullmatch(s)
    renamed = bool(m and m.group("new"))
    if m is None:
        m = _THING_NAMED.fullmatch(s)
        renamed = bool(m and m.group("verb").lower().startswith("renamed"))
    if m is None:
        m = _HAVE_A_NAMED.fullmatch(s)
    if m is None:
        return None
    slug = _thing_slug(m.group("np"))
    if not slug:
        return None, state
    key = f"{slug}{NAME_KEY_SUFFIX}"
    value, contrast = _clean(m.group("v"), "name")
    if value is None:
        return None, state
    correction = (
        renamed
        or contrast
        or bool(_ACTUALLY.search(s))
        or (state.renaming and state.referent == key)
    )
    return _Cand(key, value, correction), _with_referent(state, key)


def _simple(pattern: re.Pattern[str], key: str, kind: str):
    def rule(s: str, state: _State, whole: str) -> tuple[_Cand | None, _State] | None:
        m = pattern.fullmatch(s)
        if not m:
            return None
        raw = m.group("v")
        if kind == "pref":
            raw = re.sub(r"^it\s+(?=when\b)", "", raw.strip(), flags=re.I)
        value, contrast = _clean(raw, kind)
        if value is None:
            return None, state
        correction = key not in MANY_KEYS and (contrast or bool(_ACTUALLY.search(s)))
        return _Cand(key, value, correction), state

    return rule


def _people(pattern: re.Pattern[str], attribute: str, kind: str):
    def rule(s: str, state: _State, whole: str) -> tuple[_Cand | None, _State] | None:
        m = pattern.fullmatch(s)
        if not m:
            return None
        slug = _person_slug(m.group("name"))
        if not slug:
            return None, state
        value, contrast = _clean(m.group("v"), kind)
        if value is None:
            return None, state
        correction = contrast or bool(_ACTUALLY.search(s))
        return _Cand(f"people.{slug}.{attribute}", value, correction), state

    return rule


# Most specific first; the first rule whose pattern matches claims the clause.
_RULES = (
    _rule_rename,
    _rule_changed_name,
    _rule_it,
    _simple(_AVOID_CALL, KEY_AVOID_NICKNAME, "name"),
    _simple(_AVOID_BEING, KEY_AVOID_NICKNAME, "name"),
    _simple(_MY_NAME, KEY_PREFERRED_NAME, "name"),
    _simple(_GO_BY, KEY_PREFERRED_NAME, "name"),
    _simple(_CALL_ME, KEY_PREFERRED_NAME, "name"),
    _rule_thing,
    _simple(_USER_LIVES, KEY_LIVES_IN, "place"),
    _simple(_USER_WORKS, KEY_WORKS_AT, "place"),
    _simple(_USER_DISLIKES, KEY_DISLIKES, "pref"),
    _simple(_USER_LIKES, KEY_LIKES, "pref"),
    _people(_PEOPLE_LIVES, "lives_in", "place"),
    _people(_PEOPLE_WORKS, "works_at", "place"),
    _people(_PEOPLE_ROLE, "role", "role"),
)


def _run_clause(clause: str, state: _State, whole: str) -> tuple[_Cand | None, _State]:
    s = " ".join(clause.split())
    m = _MARKERS.match(s)
    marker = s[: m.end()] if m else ""
    s = s[len(marker):].strip()
    if not s:
        return None, state
    for rule in _RULES:
        result = rule(s, state, whole)
        if result is None:
            continue
        cand, new_state = result
        if cand is not None:
            if not valid_key(cand.key):
                return None, new_state
            if cand.key in MANY_KEYS:
                cand = replace(cand, correction=False)
            elif _ACTUALLY.search(marker):
                cand = replace(cand, correction=True)
        return cand, new_state
    return None, state


# ---------------------------------------------------------------------------------------------
# Public API


def extract(text: str, *, last_named_key: str | None = None) -> list[Extraction]:
    """Facts stated in a user message, in text order (SPEC §8).

    `last_named_key` is the key of the user's most recently named thing (e.g.
    "basil_plant.name"); it resolves "it" in "I renamed it. It is Marlowe now, not Harbor."
    A sentence whose "it" cannot be resolved yields nothing."""
    if not text:
        return []
    prepared = _prepare(text)
    referent = last_named_key if is_thing_name_key(last_named_key) else None
    state = _State(referent=referent, renaming=False)
    found: list[Extraction] = []
    for s_start, s_end in _sentences(prepared):
        for h_start, h_end in _pieces(prepared, s_start, s_end, _HARD_SPLIT):
            pieces = _pieces(prepared, h_start, h_end, _SOFT_SPLIT)
            if len(pieces) > _MAX_SOFT_PIECES:
                pieces = [(h_start, h_end)]
            cur_start, cur_end = pieces[0]
            for p_start, p_end in pieces[1:]:
                _, after_cur = _run_clause(prepared[cur_start:cur_end], state, prepared)
                cand, _ = _run_clause(prepared[p_start:p_end], after_cur, prepared)
                # Split when the part after the comma/"and" is a fact of its own, unless
                # what precedes is only a marker ("Actually, my dog's name is Max").
                if cand is not None and not _only_markers(prepared[cur_start:cur_end]):
                    state = _emit(found, prepared, cur_start, cur_end, state)
                    cur_start = p_start
                cur_end = p_end
            state = _emit(found, prepared, cur_start, cur_end, state)
    return _dedupe(found)


def _only_markers(clause: str) -> bool:
    s = " ".join(clause.split())
    m = _MARKERS.match(s)
    return not s or (m is not None and m.end() == len(s))


def _emit(found: list[Extraction], text: str, start: int, end: int, state: _State) -> _State:
    start, end = _trim(text, start, end)
    if start >= end:
        return state
    cand, state = _run_clause(text[start:end], state, text)
    if cand is not None:
        found.append(Extraction(cand.key, cand.value, cand.correction, (start, end)))
    return state


def _dedupe(found: list[Extraction]) -> list[Extraction]:
    seen: dict[tuple[str, str], int] = {}
    out: list[Extraction] = []
    for item in found:
        slot = (item.key, unicodedata.normalize("NFC", item.value).strip().casefold())
        if slot in seen:
            index = seen[slot]
            if item.correction and not out[index].correction:
                out[index] = replace(out[index], correction=True)
            continue
        seen[slot] = len(out)
        out.append(item)
    return out


# ---------------------------------------------------------------------------------------------
# Questions (GET /memory/ask)

_Q_LEAD = _c(r"(?:(?:so|hey|ok|okay|and|um+|remind\s+me|quick\s+question)\b[\s,:-]*)+")
_Q_TAIL = _c(r"(?:\s+(?:now|again|these\s+days|currently|nowadays))+$")
_PERSON = f"(?P<name>{_W})"
_THING = rf"{_DET}\s+(?P<np>{_NP})"

# (pattern, key template): "{person}" is a person slug, "{thing}" a thing slug.
ANSWERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_c(r"where\s+(?:do|did)\s+i\s+(?:currently\s+)?live"), KEY_LIVES_IN),
    (_c(r"where\s+am\s+i\s+(?:living|based)"), KEY_LIVES_IN),
    (_c(r"where\s+(?:do|did)\s+i\s+(?:currently\s+)?work"), KEY_WORKS_AT),
    (_c(r"who\s+do\s+i\s+work\s+for"), KEY_WORKS_AT),
    (_c(r"where\s+am\s+i\s+working"), KEY_WORKS_AT),
    (_c(r"what\s+should\s+you\s+not\s+call\s+me|"
        r"what\s+(?:shouldn't|should\s+not)\s+you\s+call\s+me|"
        r"what\s+(?:names?|nicknames?)\s+(?:do\s+i\s+(?:dislike|hate|not\s+like)|"
        r"should\s+you\s+(?:avoid|not\s+use))"), KEY_AVOID_NICKNAME),
    (_c(r"what\s+(?:should|do|can|will)\s+you\s+call\s+me"), KEY_PREFERRED_NAME),
    (_c(r"what(?:\s+is|'s)\s+my\s+(?:preferred\s+)?name"), KEY_PREFERRED_NAME),
    (_c(r"what\s+do\s+i\s+(?:like|prefer|want)\s+to\s+be\s+called"), KEY_PREFERRED_NAME),
    (_c(r"what\s+do\s+i\s+(?:really\s+)?(?:like|love|enjoy)"), KEY_LIKES),
    (_c(r"what\s+do\s+i\s+(?:dislike|hate)|what\s+(?:don't\s+i|do\s+i\s+not)\s+like"),
     KEY_DISLIKES),
    (_c(rf"what(?:\s+is|'s|\s+was)\s+{_THING}\s*'s?\s+name"), "{thing}.name"),
    (_c(rf"what(?:\s+is|'s|\s+was)\s+the\s+name\s+of\s+{_THING}"), "{thing}.name"),
    (_c(rf"what(?:\s+is|'s|\s+was)\s+{_THING}\s+(?:called|named)"), "{thing}.name"),
    (_c(rf"what\s+did\s+(?:i|we)\s+(?:name|call|rename)\s+{_THING}"), "{thing}.name"),
    (_c(rf"where\s+(?:does|did)\s+{_PERSON}\s+(?:currently\s+)?work"), "people.{person}.works_at"),
    (_c(rf"who\s+does\s+{_PERSON}\s+work\s+for"), "people.{person}.works_at"),
    (_c(rf"where\s+is\s+{_PERSON}\s+(?:working|employed)"), "people.{person}.works_at"),
    (_c(rf"where\s+(?:does|did)\s+{_PERSON}\s+(?:currently\s+)?(?:live|move(?:\s+to)?)"),
     "people.{person}.lives_in"),
    (_c(rf"where\s+is\s+{_PERSON}\s+(?:living|based)"), "people.{person}.lives_in"),
    (_c(rf"what(?:\s+is|'s)\s+{_PERSON}\s*'s?\s+(?:job|role|occupation|profession|title|"
        r"line\s+of\s+work)"), "people.{person}.role"),
    (_c(rf"what\s+does\s+{_PERSON}\s+do(?:\s+for\s+(?:work|a\s+living))?"),
     "people.{person}.role"),
)


def question_key(q: str) -> str | None:
    """The key a simple question asks about (SPEC §8, `GET /memory/ask`), or None.
    "Where does Priya work?" → "people.priya.works_at"; "What is my dog called?" →
    "dog.name". Pronouns ("Where does she work?") are never resolved."""
    if not q:
        return None
    s = " ".join(_prepare(q).split())
    s = _strip_edges(s)
    lead = _Q_LEAD.match(s)
    if lead:
        s = s[lead.end():]
    s = _Q_TAIL.sub("", s)
    for pattern, template in ANSWERS:
        m = pattern.fullmatch(s)
        if not m:
            continue
        groups = m.groupdict()
        if "{person}" in template:
            slug = _person_slug(groups["name"])
            if not slug:
                return None
            key = template.format(person=slug)
        elif "{thing}" in template:
            slug = _thing_slug(groups["np"])
            if not slug:
                return None
            key = template.format(thing=slug)
        else:
            key = template
        return key if valid_key(key) else None
    return None
