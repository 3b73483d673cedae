"""What a reply used, in words (SPEC E2): a turn's stored plan snapshot read back for the
person whose turn it was — the memories the prompt held (label, value, certainty, a link to
the memory's card), those left out and why, the boundary decisions, and how many earlier
messages it was given or not and why. Exactly what the snapshot holds: nothing is resolved
again after the fact. A memory forgotten since shows as forgotten, never its value (F2).

One line per memory, as the memories page counts them — a key in a scope (for a `many` key,
one value's chain of versions) — never one per stored version: the versions a given value
replaced or confirmed fold into its line, and a memory left out is named once, with the
reason of its newest version. Every line left out says why in words.

A plan lists at most 20 memories left out per reason and counts them all (I9): where it
counted more than it listed, the section says "…and N more" with the reason, once per reason.
A plan stored before the counts listed every one. The earlier messages are counted from the
plan's totals, whichever kind of plan it is.

Standard library only: the selector reads the rows, the caller passes the words in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from conversations.plan_snapshot import PlanSnapshot
from memory.domain import normalise_value

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
    "withheld": "it holds something you asked the companion to forget",
}
# A reason this page has no words for still gets a sentence: never a label without its reason.
LEFT_OUT_UNKNOWN = "it was left out of the prompt"
# Why an earlier message was not given (the planner's budget, F6's withholding).
MESSAGE_REASONS = ("budget", "forgotten")
EFFECT_WORDS = {"allow": "allowed", "ask": "asked you first", "deny": "denied"}


@dataclass(frozen=True)
class Held:
    """A memory record as it is stored now: its key, its value, when it was forgotten
    (`None`: not forgotten; its value is then gone), and where it sits among its versions —
    its scope, version and the record it supersedes; `many`: its key holds several values."""

    key: str
    value: str
    forgotten_at: str | None = None  # the day it was forgotten, in the page's words
    scope_id: str = ""
    version: int = 0
    supersedes: str | None = None
    many: bool = False


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
    note: str = ""  # for a memory given: what became of its earlier versions ("you confirmed it")


@dataclass(frozen=True)
class MoreLeftOut:
    """I9: memories a plan left out for one reason and counted without listing them."""

    count: int
    reason: str  # why, in words

    @property
    def words(self) -> str:
        return f"…and {self.count} more: {self.reason}"


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
    more_left_out: list[MoreLeftOut] = field(default_factory=list)  # I9: "…and N more"
    decisions: list[UsedDecision] = field(default_factory=list)
    messages_left_out: int = 0  # earlier messages not given, whatever the reason
    history: int = 0  # how many earlier messages the prompt held
    messages_by_reason: dict[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.memories or self.left_out or self.more_left_out or self.decisions)

    @property
    def message_words(self) -> list[str]:
        """The earlier messages in sentences: how many were given, how many did not fit, how
        many were withheld because the person asked to forget something (F6)."""
        return message_words(self.history, self.messages_by_reason)


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def message_words(history: int, left_out: Mapping[str, int]) -> list[str]:
    """E2 in plain words: "It was given no earlier messages.", "It was also given 4 earlier
    messages; 22 older ones did not fit.", "3 earlier messages were withheld because you asked
    the companion to forget something they mention." """
    budget, forgotten = left_out.get("budget", 0), left_out.get("forgotten", 0)
    other = sum(n for reason, n in left_out.items() if reason not in MESSAGE_REASONS)
    if history:
        first = f"It was also given {_n(history, 'earlier message', 'earlier messages')}"
        if budget:
            first += f"; {_n(budget, 'older one', 'older ones')} did not fit"
    else:
        first = "It was given no earlier messages"
        if budget:
            first += (
                f": {'the earlier one' if budget == 1 else f'the {budget} earlier ones'} did not "
                "fit"
            )
    out = [first + "."]
    if forgotten:
        out.append(
            f"{_n(forgotten, 'earlier message was', 'earlier messages were')} withheld because you "
            "asked the companion to forget something "
            f"{'it mentions' if forgotten == 1 else 'they mention'}."
        )
    if other:
        out.append(
            f"{_n(other, 'other earlier message was', 'other earlier messages were')} left out."
        )
    return out


def memory_ids(snapshot) -> list[str]:
    """Every memory id a stored plan names (held or left out), once each, in order."""
    found = PlanSnapshot.of(snapshot)
    return found.memory_ids() if found is not None else []


def decision_ids(snapshot) -> list[str]:
    """The decision ids a stored plan names but does not describe (a snapshot stored before
    it kept each decision's capability and effect)."""
    found = PlanSnapshot.of(snapshot)
    return found.undescribed_decisions() if found is not None else []


def _memory_of(record_id: str, held: Mapping[str, Held]) -> tuple:
    """The memory a record is a version of: its key in its scope; for a `many` key, the chain
    of versions its value started (a confirm supersedes the same value, a correction of one
    value leaves the others)."""
    record = held.get(record_id)
    if record is None:
        return ("record", record_id)
    if not record.many:
        return ("slot", record.scope_id, record.key)
    root, seen = record_id, {record_id}
    while True:
        older = held.get(root)
        target = older.supersedes if older is not None else None
        if target is None or target in seen or target not in held:
            return ("chain", root)
        seen.add(target)
        root = target


def _same_value(a: Held, b: Held) -> bool:
    return bool(a.value) and bool(b.value) and normalise_value(a.value) == normalise_value(b.value)


def _note(given: Held | None, versions: list[Held]) -> str:
    """What became of a given memory's earlier versions: confirmed (the same value again) or
    replaced (another value)."""
    if given is None or not versions:
        return ""
    if any(_same_value(given, old) for old in versions):
        return "you confirmed it"
    old = max(versions, key=lambda r: r.version)
    return (
        f"it replaced “{old.value}”"
        if old.value and not given.forgotten_at
        else "it replaced an earlier value"
    )


def used(
    snapshot: PlanSnapshot | Mapping | None,
    *,
    held: Mapping[str, Held],
    label: Callable[[str], str],
    certainty_names: Mapping[str, str],
    capability_name: Callable[[str], str],
    card: Callable[[str], str],
    history: Callable[[str], str],
    current: frozenset[str] | set[str] = frozenset(),
    logged: Mapping[str, tuple[str, str]] | None = None,
) -> Used:
    """The section for one turn's snapshot. `held`: the records the snapshot names, by id;
    `card(id)` the link to a memory's card, for the ids remembered now (`current`), and
    `history(id)` the link to its history for the others; `logged`: decision id → (capability,
    effect) from the decision log, for snapshots that keep only the ids."""
    snapshot = PlanSnapshot.of(snapshot)
    if snapshot is None:
        return Used(planned=False)
    out = Used(planned=True, history=len(snapshot.history))
    ids, levels = snapshot.memories, snapshot.certainty

    def words(reason: str) -> str:
        return LEFT_OUT_WORDS.get(reason) or LEFT_OUT_UNKNOWN

    def memory(record_id: str, *, level: str = "", reason: str = "", note: str = "") -> UsedMemory:
        record = held.get(record_id)
        link = card(record_id) if record_id in current else history(record_id)
        why = words(reason) if reason else ""
        if record is None:
            return UsedMemory(record_id, "A memory", None, gone="no longer kept", reason=why)
        name = label(record.key)
        if record.forgotten_at is not None:  # F2: never the value
            return UsedMemory(
                record_id,
                name,
                None,
                link=link,
                gone=f"forgotten since {record.forgotten_at}",
                reason=why,
            )
        return UsedMemory(
            record_id,
            name,
            record.value,
            certainty=certainty_names.get(level, ""),
            certainty_code=level if isinstance(level, str) else "",
            link=link,
            reason=why,
            note=note,
        )

    left = [(item_id, reason) for kind, item_id, reason in snapshot.excluded if kind == "memory"]
    _count_left_out(out, snapshot, words)

    groups = _grouped(ids, left, held)
    done: set[tuple] = set()
    for record_id, level in zip(ids, levels, strict=True):
        group = _memory_of(record_id, held)
        if group in done:
            continue
        done.add(group)
        older = [held[i] for i, reason in groups[group] if reason == "superseded" and i in held]
        note = _note(held.get(record_id), older)
        out.memories.append(
            memory(record_id, level=level if isinstance(level, str) else "", note=note)
        )
    for record_id, _ in left:
        group = _memory_of(record_id, held)
        if group in done:
            continue
        done.add(group)
        newest, reason = _newest(groups[group], held)
        out.left_out.append(memory(newest, reason=reason))
    out.decisions = _decisions(snapshot, logged, capability_name)
    return out


def _grouped(
    ids: Sequence[str], left: Sequence[tuple[str, str]], held: Mapping[str, Held]
) -> dict[tuple, list[tuple[str, str | None]]]:
    """One line per memory: the versions the plan names, grouped — memory → [(record id,
    reason, or None: given)]."""
    groups: dict[tuple, list[tuple[str, str | None]]] = {}
    for record_id in ids:
        groups.setdefault(_memory_of(record_id, held), []).append((record_id, None))
    for record_id, reason in left:
        groups.setdefault(_memory_of(record_id, held), []).append((record_id, reason))
    return groups


def _count_left_out(out: Used, snapshot: PlanSnapshot, words: Callable[[str], str]) -> None:
    """The earlier messages left out, by reason, from the plan's totals; the memories it
    counted without listing them, per reason (I9)."""
    for (kind, reason), n in snapshot.left_out_counts().items():
        if kind != "memory":
            out.messages_left_out += n
            out.messages_by_reason[reason] = n
    out.more_left_out = [
        MoreLeftOut(n, words(reason))
        for kind, reason, n in snapshot.not_listed()
        if kind == "memory"
    ]


def _decisions(
    snapshot: PlanSnapshot,
    logged: Mapping[str, tuple[str, str]] | None,
    capability_name: Callable[[str], str],
) -> list[UsedDecision]:
    described = list(snapshot.policy)
    if not described and logged:
        described = [(i, *logged[i]) for i in snapshot.decisions if i in logged]
    return [
        UsedDecision(capability_name(capability), effect, EFFECT_WORDS.get(effect, effect))
        for _, capability, effect in described
    ]


def _newest(versions: list[tuple[str, str | None]], held: Mapping[str, Held]) -> tuple[str, str]:
    """The version that stands for a memory left out, with its reason: the newest that was
    not merely superseded (a replaced or confirmed version is not why the memory was left
    out); when all were, the newest."""

    def order(item):
        record = held.get(item[0])
        return record.version if record is not None else -1

    kept = [v for v in versions if v[1] != "superseded"]
    if kept:
        record_id, reason = max(kept, key=order)
        return record_id, reason or ""
    record_id, reason = max(versions, key=order)
    return record_id, reason or ""
