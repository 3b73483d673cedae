"""What a reply used, in words (SPEC E2): a turn's stored plan snapshot read back for the
person whose turn it was — the memories the prompt held (label, value, certainty, a link to
the memory's card), those left out and why, and the boundary decisions. Exactly what the
snapshot holds: nothing is resolved again after the fact. A memory forgotten since shows as
forgotten, never its value (F2).

Standard library only: the selector reads the rows, the caller passes the words in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# Why a memory was left out of the prompt, in the person's words (resolver R1–R6, projection
# P1–P3, the planner's budget, the `use` switch of I8).
LEFT_OUT_WORDS = {
    "scope": "it belongs to another character or place",
    "forgotten": "you asked the companion to forget it",
    "not-yet-valid": "it did not apply yet",
    "expired": "it no longer applied",
    "superseded": "a newer value had replaced it",
    "lower-precedence": "what you said yourself takes precedence",
    "unsupported": "no message of yours backs it up",
    "low-confidence": "the companion was not sure enough of it",
    "shadowed": "a value for this conversation or scene was used instead",
    "budget": "it did not fit in the prompt",
    "memory-off": "you had turned memory use off",
}
EFFECT_WORDS = {"allow": "allowed", "ask": "asked you first", "deny": "denied"}


@dataclass(frozen=True)
class Held:
    """A memory record as it is stored now: its key, its value, and when it was forgotten
    (`None`: not forgotten; its value is then gone)."""

    key: str
    value: str
    forgotten_at: str | None = None  # the day it was forgotten, in the page's words


@dataclass(frozen=True)
class UsedMemory:
    id: str
    label: str
    value: str | None  # None: forgotten since (or no longer kept)
    certainty: str = ""  # the certainty's name, "" when the snapshot predates it
    certainty_code: str = ""
    link: str = ""  # the memory's card, or its history when it is no longer current
    gone: str = ""  # "forgotten since 3 Aug 2026" / "no longer kept"
    reason: str = ""  # for a memory left out: why, in words


@dataclass(frozen=True)
class UsedDecision:
    capability: str
    effect: str  # allow | ask | deny
    words: str


@dataclass
class Used:
    """The section under one reply. `planned` is False for a turn with no stored plan."""

    planned: bool
    memories: list[UsedMemory] = field(default_factory=list)
    left_out: list[UsedMemory] = field(default_factory=list)
    decisions: list[UsedDecision] = field(default_factory=list)
    messages_left_out: int = 0
    history: int = 0  # how many earlier messages the prompt held

    @property
    def empty(self) -> bool:
        return not (self.memories or self.left_out or self.decisions)


def memory_ids(snapshot: Mapping | None) -> list[str]:
    """Every memory id a snapshot names (held or left out), once each, in order."""
    snapshot = snapshot or {}
    held = [i for i in snapshot.get("memories") or [] if isinstance(i, str)]
    left = [item[1] for item in _excluded(snapshot) if item[0] == "memory"]
    return list(dict.fromkeys([*held, *left]))


def decision_ids(snapshot: Mapping | None) -> list[str]:
    """The decision ids a snapshot names but does not describe (a snapshot stored before it
    kept each decision's capability and effect)."""
    snapshot = snapshot or {}
    described = {row[0] for row in _policy(snapshot)}
    return [i for i in snapshot.get("decisions") or [] if isinstance(i, str) and i not in described]


def _excluded(snapshot: Mapping) -> list[tuple[str, str, str]]:
    return [tuple(item) for item in snapshot.get("excluded") or []
            if isinstance(item, list | tuple) and len(item) == 3
            and all(isinstance(part, str) for part in item)]


def _policy(snapshot: Mapping) -> list[tuple[str, str, str]]:
    return [tuple(item) for item in snapshot.get("policy") or []
            if isinstance(item, list | tuple) and len(item) == 3
            and all(isinstance(part, str) for part in item)]


def used(snapshot: Mapping | None, *, held: Mapping[str, Held], label: Callable[[str], str],
         certainty_names: Mapping[str, str], capability_name: Callable[[str], str],
         card: Callable[[str], str], history: Callable[[str], str],
         current: frozenset[str] | set[str] = frozenset(),
         logged: Mapping[str, tuple[str, str]] | None = None) -> Used:
    """The section for one turn's snapshot. `held`: the records the snapshot names, by id;
    `card(id)` the link to a memory's card, for the ids remembered now (`current`), and
    `history(id)` the link to its history for the others; `logged`: decision id → (capability, effect) from the decision log,
    for snapshots that keep only the ids."""
    if not snapshot:
        return Used(planned=False)
    out = Used(planned=True, history=len(snapshot.get("history") or []))
    ids = [i for i in snapshot.get("memories") or [] if isinstance(i, str)]
    levels = snapshot.get("certainty") or []
    levels = levels if isinstance(levels, list) and len(levels) == len(ids) else [""] * len(ids)

    def memory(record_id: str, *, level: str = "", reason: str = "") -> UsedMemory:
        record = held.get(record_id)
        link = card(record_id) if record_id in current else history(record_id)
        if record is None:
            return UsedMemory(record_id, "A memory", None, gone="no longer kept",
                              reason=LEFT_OUT_WORDS.get(reason, reason))
        name = label(record.key)
        if record.forgotten_at is not None:  # F2: never the value
            return UsedMemory(record_id, name, None, link=link, gone=f"forgotten since {record.forgotten_at}",
                              reason=LEFT_OUT_WORDS.get(reason, reason))
        return UsedMemory(record_id, name, record.value, certainty=certainty_names.get(level, ""),
                          certainty_code=level if isinstance(level, str) else "", link=link,
                          reason=LEFT_OUT_WORDS.get(reason, reason))

    out.memories = [memory(i, level=level if isinstance(level, str) else "")
                    for i, level in zip(ids, levels, strict=True)]
    for kind, item_id, reason in _excluded(snapshot):
        if kind == "memory":
            out.left_out.append(memory(item_id, reason=reason))
        else:
            out.messages_left_out += 1
    described = _policy(snapshot)
    if not described and logged:
        described = [(i, *logged[i]) for i in snapshot.get("decisions") or [] if i in logged]
    out.decisions = [UsedDecision(capability_name(capability), effect, EFFECT_WORDS.get(effect, effect))
                     for _, capability, effect in described]
    return out
