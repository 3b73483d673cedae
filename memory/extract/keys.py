"""The keys the extractor produces and what it reports for one fact (SPEC §1, §8)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.domain import valid_key

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
