"""A conversation's transcript page (SPEC §7, E1, E2, F6, I8): every message, read-only, with
the memories it produced and what became of them, under each companion reply what its prompt
held, and the notice on a message the companion no longer sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.urls import reverse

from config.pages import day, when
from memory.presentation import CERTAINTY, Sentence, Wording, by_scoped_key, standing
from memory.selectors.pages import key_templates
from policy.presentation import capability_name

from .selectors import replies_used, transcript
from .used import Held, Used, used


@dataclass
class Produced:
    id: str
    history: str  # the URL of the memory's history page
    label: str
    value: str | None  # None: forgotten
    status: str
    current: bool
    sentence: Sentence | None = None


@dataclass
class TranscriptMessage:
    id: str
    seq: int
    role: str
    speaker: str
    content: str
    created_at: datetime
    when: str
    produced: list[Produced] = field(default_factory=list)
    blocked: int = 0
    used: Used | None = None  # under a companion reply: what its prompt held (SPEC E2)
    not_learned: bool = False  # I8: `learn` was off when this message's turn was made
    withheld: str = ""  # F6: the notice that the companion no longer sees it, and why


def transcript_page(user, conversation) -> dict:
    """What the transcript page of `conversation` (the user's own) shows."""
    read = transcript(user, conversation)
    conversation, remembered = read.conversation, read.remembered
    speakers = {"user": "You", "assistant": conversation.character.name, "system": "System"}
    by_id = remembered.by_id
    words = Wording(remembered.registry.labels, key_templates())
    states, slots = remembered.states, by_scoped_key(remembered.records)  # E1
    active = {r.id for r in remembered.active}
    root = reverse("memory:list")
    messages_ = []
    for i, seq, role, content, at in read.messages:
        message = TranscriptMessage(
            str(i), seq, role, speakers.get(role, role), content, at, when(at)
        )
        message.blocked = read.blocked.get(message.id, 0)
        message.withheld = withheld_notice(read.withheld.get(message.id, ()), words.label)
        for memory_id in dict.fromkeys(read.produced.get(message.id, ())):
            record = by_id.get(memory_id)
            if record is not None:
                now = standing(record, states, slots[(record.scope_id, record.key)])
                message.produced.append(
                    Produced(
                        memory_id,
                        f"{root}{memory_id}/history",
                        words.label(record.key),
                        record.value,
                        now.words,
                        now.current,
                        words.sentence(record.key, record.value),
                    )
                )
            elif memory_id in read.forgotten:
                key, since = read.forgotten[memory_id]
                message.produced.append(
                    Produced(
                        memory_id,
                        f"{root}{memory_id}/history",
                        words.label(key),
                        None,
                        f"forgotten on {day(since)}",
                        False,
                    )
                )
        messages_.append(message)
    _what_was_used(
        user, conversation, messages_, words, active, root, remembered.registry.many_keys
    )
    return {
        "conversation": conversation,
        "messages_": messages_,
        "started": when(conversation.created_at),
    }


def withheld_notice(forgets, label) -> str:
    """F6: which forgets withhold a message, in words (the memory's label and the day, never
    the value); empty for a message the companion still sees."""
    if not forgets:
        return ""
    named = [
        f"“{label(key)}” on {day(at)}"
        + (" (by support, on your behalf)" if by == "support" else "")
        for key, at, by in forgets
    ]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return (
        "The companion no longer sees this message, because it was asked to forget "
        f"{listed}. It stays here for you to read."
    )


def _what_was_used(
    user,
    conversation,
    messages_: list[TranscriptMessage],
    words: Wording,
    active: set[str],
    root: str,
    many_keys: frozenset[str],
) -> None:
    """SPEC E2: under each companion reply, what its stored plan held; I8: the messages a turn
    learned nothing from because `learn` was off."""
    read = replies_used(user, conversation)
    held = {
        i: Held(
            key,
            value,
            day(since) if since is not None else None,
            scope_id,
            version,
            supersedes,
            many=key in many_keys,
        )
        for i, (key, value, since, scope_id, version, supersedes) in read.held.items()
    }
    names = {code: name for code, (name, _) in CERTAINTY.items()}
    for message in messages_:
        message.not_learned = message.id in read.not_learned
        if message.role == "assistant":
            message.used = used(
                read.snapshots.get(message.id),
                held=held,
                label=words.label,
                certainty_names=names,
                capability_name=capability_name,
                card=lambda i: f"{root}?card={i}#m-{i}",
                history=lambda i: f"{root}{i}/history",
                current=active,
                logged=read.logged,
            )
