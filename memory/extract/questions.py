"""Question matching for `GET /memory/ask` (SPEC §8): which key a question asks about."""

from __future__ import annotations

import re

from memory.domain import valid_key

from .keys import (
    KEY_AVOID_NICKNAME,
    KEY_DISLIKES,
    KEY_LIKES,
    KEY_LIVES_IN,
    KEY_PREFERRED_NAME,
    KEY_WORKS_AT,
)
from .text import _person_slug, _prepare, _strip_edges, _thing_slug
from .words import _DET, _NP, _W, _c

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
    (
        _c(
            r"what\s+should\s+you\s+not\s+call\s+me|"
            r"what\s+(?:shouldn't|should\s+not)\s+you\s+call\s+me|"
            r"what\s+(?:names?|nicknames?)\s+(?:do\s+i\s+(?:dislike|hate|not\s+like)|"
            r"should\s+you\s+(?:avoid|not\s+use))"
        ),
        KEY_AVOID_NICKNAME,
    ),
    (_c(r"what\s+(?:should|do|can|will)\s+you\s+call\s+me"), KEY_PREFERRED_NAME),
    (_c(r"what(?:\s+is|'s)\s+my\s+(?:preferred\s+)?name"), KEY_PREFERRED_NAME),
    (_c(r"what\s+do\s+i\s+(?:like|prefer|want)\s+to\s+be\s+called"), KEY_PREFERRED_NAME),
    (_c(r"what\s+do\s+i\s+(?:really\s+)?(?:like|love|enjoy)"), KEY_LIKES),
    (
        _c(r"what\s+do\s+i\s+(?:dislike|hate)|what\s+(?:don't\s+i|do\s+i\s+not)\s+like"),
        KEY_DISLIKES,
    ),
    (_c(rf"what(?:\s+is|'s|\s+was)\s+{_THING}\s*'s?\s+name"), "{thing}.name"),
    (_c(rf"what(?:\s+is|'s|\s+was)\s+the\s+name\s+of\s+{_THING}"), "{thing}.name"),
    (_c(rf"what(?:\s+is|'s|\s+was)\s+{_THING}\s+(?:called|named)"), "{thing}.name"),
    (_c(rf"what\s+did\s+(?:i|we)\s+(?:name|call|rename)\s+{_THING}"), "{thing}.name"),
    (_c(rf"where\s+(?:does|did)\s+{_PERSON}\s+(?:currently\s+)?work"), "people.{person}.works_at"),
    (_c(rf"who\s+does\s+{_PERSON}\s+work\s+for"), "people.{person}.works_at"),
    (_c(rf"where\s+is\s+{_PERSON}\s+(?:working|employed)"), "people.{person}.works_at"),
    (
        _c(rf"where\s+(?:does|did)\s+{_PERSON}\s+(?:currently\s+)?(?:live|move(?:\s+to)?)"),
        "people.{person}.lives_in",
    ),
    (_c(rf"where\s+is\s+{_PERSON}\s+(?:living|based)"), "people.{person}.lives_in"),
    (
        _c(
            rf"what(?:\s+is|'s)\s+{_PERSON}\s*'s?\s+(?:job|role|occupation|profession|title|"
            r"line\s+of\s+work)"
        ),
        "people.{person}.role",
    ),
    (_c(rf"what\s+does\s+{_PERSON}\s+do(?:\s+for\s+(?:work|a\s+living))?"), "people.{person}.role"),
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
        s = s[lead.end() :]
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
