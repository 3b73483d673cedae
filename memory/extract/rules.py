"""The extractor's clause rules, most specific first (SPEC §8): each rule that matches claims
its clause and yields at most one fact."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memory.domain import valid_key

from .keys import (
    KEY_AVOID_NICKNAME,
    KEY_DISLIKES,
    KEY_LIKES,
    KEY_LIVES_IN,
    KEY_PREFERRED_NAME,
    KEY_WORKS_AT,
    MANY_KEYS,
    NAME_KEY_SUFFIX,
    is_thing_name_key,
)
from .text import _clean, _looks_proper, _person_slug, _thing_slug
from .words import _ADV, _DET, _I, _NP, _RELATIONS, _W, _c

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
_IT_NAME_IS = _c(
    r"(?:its|it's)\s+(?P<new>new\s+)?name\s+(?:is|'s)\s+(?:now\s+|actually\s+)*(?P<v>.+)"
)
_IT_NAMED = _c(
    rf"it(?:\s+is|'s|\s+was|\s+has\s+been)\s+{_ADV}(?P<verb>named|called|renamed(?:\s+to)?)"
    r"\s+(?P<v>.+)"
)
_IT_IS = _c(rf"(?P<pro>it|he|she)(?:\s+is|'s)\s+{_ADV}(?P<v>.+)")

# Avoided nicknames, preferred names.
_AVOID_CALL = _c(
    r"(?:do\s+not|don't|dont|never|stop|quit)\s+(?:ever\s+)?call(?:ing)?\s+me\s+(?P<v>.+)"
)
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
_MY_NAME = _c(
    r"my\s+(?:preferred\s+|real\s+)?name(?:\s+is|'s)\s+(?:now\s+|actually\s+|really\s+)*(?P<v>.+)"
)
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
            np, value = body[: to.start()], body[to.end() :]
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
    """ "the basil plant Marlowe" has no "to": split the noun phrase from the new name.
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
    """ "its name is X", "it is called X", and "It is Marlowe now, not Harbor" (SPEC §8)."""
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
    s = s[len(marker) :].strip()
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
