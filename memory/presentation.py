"""How the pages put memories into words: scopes ("with Captain Rowan", "only in the
“greenhouse” scene of …"), provenance ("from your message on 3 Aug"), who set a value, certainty
and why a value is not the current one. Shared by the memory, conversation and boundary pages;
it imports no view, so no page module imports another's.

`ScopeNames` and `source_messages` read what they name (characters, conversations, message
ids and times — never message text) in bulk, so a page's query count does not grow with the
number of memories it shows."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Q
from django.urls import reverse

from config.pages import day
from conversations import places
from conversations.models import Character, Conversation, Message
from conversations.selectors import conversation_named

from .domain import (
    REASON_EXPIRED,
    REASON_FORGOTTEN,
    REASON_LOW_CONFIDENCE,
    REASON_LOWER_PRECEDENCE,
    REASON_NOT_YET_VALID,
    REASON_SUPERSEDED,
    REASON_UNSUPPORTED,
    STATE_ACTIVE,
    USER_AUTHORITIES,
    normalise_value,
)
from .domain import MemoryRecord as DomainRecord
from .projection import certainty_of
from .selectors.pages import key_templates
from .selectors.records import registry

# Who set a value, in words ("you, the companion's inference, a rule").
SET_BY = {
    "user-corrected": "your correction",
    "user-confirmed": "you",
    "rule-extracted": "a rule that read your message",
    "model-inferred": "the companion's inference",
}

# One certainty vocabulary for every page, in the order of P1 then P2 (SPEC §5): a name for
# each state the prompt projection gives a remembered value, and one sentence on whether and
# why it is used in conversations. No two names for one state, no one name for two.
CERTAINTY = {
    "confirmed": ("Confirmed", "Used in conversations as a fact: you said so yourself."),
    "likely": ("Likely", "Used in conversations as probably true."),
    "uncertain": (
        "Uncertain",
        "Used in conversations as uncertain: the companion should check before relying on it.",
    ),
    REASON_LOW_CONFIDENCE: (
        "Low confidence",
        "Not used in conversations: the companion is not sure enough of it.",
    ),
    REASON_UNSUPPORTED: (
        "No source",
        "Not used in conversations: no message of yours backs it up.",
    ),
}

# SPEC E1: one set of words for each state a record can be in, on every page (memories,
# transcript, history) and in the admin. `standing` refines two of them by what the record
# says of itself (an expired record the user marked no longer true; an outranking value the
# user gave), and says when the value itself is still remembered by a later record.
STATE_WORDS = {
    STATE_ACTIVE: "remembered now",
    REASON_NOT_YET_VALID: "starts later",
    REASON_EXPIRED: "ended",
    REASON_FORGOTTEN: "forgotten",
    REASON_SUPERSEDED: "replaced",
    REASON_LOWER_PRECEDENCE: "not used: another value takes precedence",
}
RETRACTED_WORDS = "no longer true"
OUTRANKED_BY_YOU_WORDS = "not used: what you said takes precedence"
CONFIRMED_WORDS = "remembered now: you confirmed it"

# Why a record of a slot is not the current value (resolver reasons, §3), in words.
NOT_CURRENT = {reason: words for reason, words in STATE_WORDS.items() if reason != STATE_ACTIVE}
NOT_CURRENT[REASON_LOWER_PRECEDENCE] = OUTRANKED_BY_YOU_WORDS


@dataclass(frozen=True)
class Standing:
    """What became of a record, in words (`words`), and whether its value is the one
    remembered now (`current`)."""

    words: str
    current: bool


def by_scoped_key(records: Iterable[DomainRecord]) -> dict[tuple[str, str], list[DomainRecord]]:
    """Records by scoped key (scope id, key), for `standing`."""
    found: dict[tuple[str, str], list[DomainRecord]] = {}
    for record in records:
        found.setdefault((record.scope_id, record.key), []).append(record)
    return found


def standing(record: DomainRecord, states: dict, records: Iterable[DomainRecord]) -> Standing:
    """A record's E1 state in the pages' words. A record whose own value is still remembered
    — by itself, or by a later record of its slot holding the same value (the user confirmed
    it, or undid "no longer true") — is "remembered now", never "replaced" or "no longer
    true". Otherwise: the state's words, "no longer true" for a window the user closed (W10),
    and for a value outranked by the user's own word, that what they said takes precedence.
    `records`: the records of the record's scoped key (`by_scoped_key`), with their states
    in `states`."""
    state = states.get(record.id)
    name = (
        state.state
        if state is not None
        else (REASON_FORGOTTEN if record.status == "forgotten" else STATE_ACTIVE)
    )
    if name == STATE_ACTIVE:
        return Standing(STATE_WORDS[STATE_ACTIVE], True)
    if name != REASON_FORGOTTEN and record.value:
        wanted = normalise_value(record.value)
        for other in records:
            other_state = states.get(other.id)
            if (
                other.id != record.id
                and other_state is not None
                and other_state.state == STATE_ACTIVE
                and other.recorded_at >= record.recorded_at
                and normalise_value(other.value) == wanted
            ):
                confirmed = other.authority in USER_AUTHORITIES
                return Standing(CONFIRMED_WORDS if confirmed else STATE_WORDS[STATE_ACTIVE], True)
    if name == REASON_EXPIRED and record.retracted_at is not None:
        return Standing(RETRACTED_WORDS, False)
    if name == REASON_LOWER_PRECEDENCE and state is not None and state.by:
        winner = next((r for r in records if r.id == state.by), None)
        if winner is not None and winner.authority in USER_AUTHORITIES:
            return Standing(OUTRANKED_BY_YOU_WORDS, False)
    return Standing(STATE_WORDS[name], False)


def certainty(record: DomainRecord) -> str:
    """P1 then P2 for a page, exactly as the prompt projection decides them: a record that is
    not the user's own word needs a source message that still exists (else `unsupported`),
    then confidence against the thresholds in settings (below them: `low-confidence`). The
    connection that told it counts as a source (SPEC §15 M3)."""
    if record.authority not in USER_AUTHORITIES and not record.sources and not record.told_by:
        return REASON_UNSUPPORTED
    cfg = settings.COMPANION
    return certainty_of(
        record, likely=cfg["CERTAINTY_LIKELY"], uncertain=cfg["CERTAINTY_UNCERTAIN"]
    )


# ---------------------------------------------------------------------------------------------
# Labels and sentences (never a field name: "Story letter: outcome")

# Other people's facts (SPEC §8: `people.<name>.<attribute>`): the name is the key's free part.
_PEOPLE_LABELS = {
    "lives_in": "Where {name} lives",
    "works_at": "Where {name} works",
    "role": "What {name} does",
}


def plain_label(key: str) -> str:
    """A label for a key the registry does not name, read as words about you or the thing it
    is about: `story.letter.outcome` → "The story letter's outcome", `user.favourite_tea` →
    "Your favourite tea", `people.priya.works_at` → "Where Priya works"."""
    parts = key.split(".")
    words = [p.replace("_", " ").replace("-", " ").strip() or p for p in parts]
    if len(parts) == 1:
        return words[0].capitalize()
    if parts[0] == "people" and len(parts) >= 3:
        name = " ".join(words[1:-1]).title()
        return _PEOPLE_LABELS.get(parts[-1], "{name}'s {attribute}").format(
            name=name, attribute=words[-1]
        )
    if parts[0] == "user":
        return "Your " + " ".join(words[1:])
    return f"The {' '.join(words[:-1])}'s {words[-1]}"


@dataclass(frozen=True)
class Sentence:
    """A value in its sentence ("Your dog is called" · "Rex" · ""): the template splits around
    the value, so the page escapes and marks up the value on its own."""

    before: str
    value: str
    after: str

    def __str__(self) -> str:
        return f"{self.before}{self.value}{self.after}"


class Wording:
    """How the pages name keys: the registry's label (or a plain one), and its sentence
    template when the registry has one ("Your basil plant is called {value}")."""

    def __init__(self, labels: dict[str, str], templates: dict[str, str]):
        self.labels, self.templates = labels, templates

    def label(self, key: str) -> str:
        return self.labels.get(key) or plain_label(key)

    def sentence(self, key: str, value: str) -> Sentence | None:
        template = self.templates.get(key, "")
        if template.count("{value}") != 1:
            return None
        before, after = template.split("{value}")
        return Sentence(before, value, after)


def wording(keys: Iterable[str] | None = None) -> Wording:
    """The labels and templates of the key registry (two queries, whatever the number of keys)."""
    return Wording(registry(keys).labels, key_templates(keys))


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class ScopeNames:
    """Scope ids (SPEC §1) in words ("everywhere", "with Captain Rowan", "only in the
    “greenhouse” scene of …") with every name read in at most two queries: the characters
    named by the scopes or met in the user's conversations, and the conversations named."""

    def __init__(self, user, scope_ids: Iterable[str]):
        slugs: set[str] = set()
        conversation_ids: set[str] = set()
        for scope_id in scope_ids:
            kind, _, rest = scope_id.partition(":")
            if kind == "character":
                slugs.add(rest.rsplit(":", 1)[-1])
            elif kind == "conversation" and _is_uuid(rest):
                conversation_ids.add(rest)
            elif kind == "scene" and _is_uuid(rest.partition(":")[0]):
                conversation_ids.add(rest.partition(":")[0])
        self.characters: dict[str, Character] = {
            c.slug: c
            for c in Character.objects.filter(
                Q(slug__in=sorted(slugs)) | Q(conversations__user=user)
            ).distinct()
        }
        self.conversations: dict[str, Conversation] = {}
        if conversation_ids:
            rows = Conversation.objects.filter(
                user=user, pk__in=sorted(conversation_ids)
            ).select_related("character")
            self.conversations = {str(c.pk): c for c in rows}

    def sorted_characters(self) -> list[Character]:
        return sorted(self.characters.values(), key=lambda c: (c.name.casefold(), c.slug))

    def character_name(self, slug: str | None) -> str:
        character = self.characters.get(slug or "")
        return character.name if character else (slug or "a character")

    def conversation_words(self, conversation_id: str) -> str:
        return conversation_named(self.conversations.get(conversation_id))

    def words(self, scope_id: str) -> str:
        kind, _, rest = scope_id.partition(":")
        conversation_id, _, scene = rest.partition(":")
        return places.place_words(
            kind,
            character_name=self.character_name(rest.rsplit(":", 1)[-1]),
            conversation=self.conversation_words(conversation_id),
            scene=scene,
        )

    def forget_words(self, scope_id: str) -> str:
        """Where a forget applies (F1), told apart from its neighbour: scope `user` forgets what
        applies everywhere and leaves what one character or conversation alone was told; `*`
        forgets the key in every scope."""
        if scope_id == "*":
            return "in every scope: with every character and in every conversation"
        if scope_id.partition(":")[0] == "user":
            return "what applies everywhere; not what one character or conversation alone was told"
        return self.words(scope_id)

    def group_of(self, scope_id: str) -> str | None:
        """The character a scope belongs with on the page (None: everywhere)."""
        kind, _, rest = scope_id.partition(":")
        if kind == "character":
            return rest.rsplit(":", 1)[-1]
        if kind in ("conversation", "scene"):
            conversation = self.conversations.get(rest.partition(":")[0])
            return conversation.character.slug if conversation else None
        return None

    def conversation_link(self, scope_id: str) -> str | None:
        kind, _, rest = scope_id.partition(":")
        if kind in ("conversation", "scene") and rest.partition(":")[0] in self.conversations:
            return reverse("conversations:detail", args=[rest.partition(":")[0]])
        return None


@dataclass(frozen=True)
class SourceMessage:
    id: str
    conversation_id: str
    role: str
    created_at: datetime

    @property
    def url(self) -> str:
        return reverse("conversations:detail", args=[self.conversation_id]) + f"#m-{self.id}"


def source_messages(user, ids: Iterable[str]) -> dict[str, SourceMessage]:
    """The messages records came from, for provenance links: one query, no message text."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = Message.objects.filter(user=user, pk__in=wanted).values_list(
        "id", "conversation_id", "role", "created_at"
    )
    return {str(i): SourceMessage(str(i), str(c), role, at) for i, c, role, at in rows}


@dataclass(frozen=True)
class Provenance:
    text: str
    url: str | None = None
    more: str = ""


def from_message(record: DomainRecord, found: dict[str, SourceMessage]) -> Provenance | None:
    messages_ = [found[s] for s in record.sources if s in found]
    if not messages_:
        return None
    newest = max(messages_, key=lambda m: (m.created_at, m.id))
    who = "your message" if newest.role == "user" else "the companion's message"
    more = f" and {len(messages_) - 1} more" if len(messages_) > 1 else ""
    return Provenance(f"from {who} on {day(newest.created_at)}", newest.url, more)


def told_by_words(name: str, at: datetime | None = None) -> str:
    """SPEC §15 M3: how every page says that a personal connection stored a value — "told by
    <name>", the name it had then, and the day when the page has no column for it."""
    return f"told by {name} on {day(at)}" if at is not None else f"told by {name}"


def told_by(record: DomainRecord, *, with_day: bool = True) -> str:
    """ "told by <name> on <day>" for a value a personal connection stored, else ""."""
    if not record.told_by:
        return ""
    return told_by_words(record.told_by[1], record.recorded_at if with_day else None)


def original_of(record: DomainRecord, by_id: dict[str, DomainRecord]) -> DomainRecord | None:
    """For a confirmation (same value, no sources of its own): the record it confirmed that
    still has a source message, following the supersedes chain in memory."""
    seen = {record.id}
    current = by_id.get(record.supersedes or "")
    while current is not None and current.id not in seen:
        if current.sources:
            return current
        seen.add(current.id)
        current = by_id.get(current.supersedes or "")
    return None


def provenance(
    record: DomainRecord, found: dict[str, SourceMessage], original: DomainRecord | None = None
) -> Provenance:
    """Where a memory came from, in words, linking to the message when there is one."""
    direct = from_message(record, found)
    if direct is not None:
        return direct
    if record.told_by:  # SPEC §15 M3: the connection that stored it, by the name it had
        return Provenance(told_by(record))
    if record.authority == "user-corrected":
        return Provenance(f"you corrected it on {day(record.recorded_at)}")
    if record.authority == "user-confirmed":
        first = from_message(original, found) if original is not None else None
        if first is not None:
            return Provenance(
                f"you confirmed it on {day(record.recorded_at)}; first {first.text}", first.url
            )
        return Provenance(f"you confirmed it on {day(record.recorded_at)}")
    if record.authority == "model-inferred":
        return Provenance(
            f"the companion's inference on {day(record.recorded_at)}, not linked to a message"
        )
    return Provenance(f"noted on {day(record.recorded_at)}, not linked to a message")


def status_words(record: DomainRecord, reason: str | None) -> str:
    """Why a value of the slot is not the current one, in words (the resolver's reason)."""
    if record.status == "forgotten":
        return "forgotten"
    if reason == REASON_EXPIRED or reason is None:
        return "no longer true" if record.retracted_at is not None else "ended"
    return NOT_CURRENT.get(reason, "not used")
