"""The history a process holds per conversation, caught up turn by turn (docs/DESIGN.md, "The
turn's state"). Standard library only.

A conversation's messages are written in `seq` order under the conversation's lock (I4) and
never change: a turn's read after the lock sees every message before its boundary, so a
process that read them once needs only the ones after the newest it holds. What can change
about a held message is whether a forget withholds it (F6) — read afresh with every turn as the
conversation's set of withheld ids — and whether it is still there (some deleted, or a
conversation deleted and its rows made again by an import): the conversation's row, read by
the turn anyway, counts the messages it lost (`Conversation.messages_removed`, a trigger's), and
the read checks the newest held message's row version; when either differs, the history is
read whole.

The candidates are held without their withheld flags, which `candidates` sets from the set read
now; texts are held for what a plan with the last read's room could admit (the rule of
`turns.storage.history_sql`), never for a withheld message; a forget or an undo lets the
user's held histories go (F7.6). A text a plan needs and the process does not hold (a larger
room than the last read's) is read after the pure pass (`needs_texts`), as under `skip`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .planner import HistoryCandidate
from .tokens import estimate_from_bytes


@dataclass(frozen=True)
class HeldHistory:
    """A conversation's history as a process holds it: every message up to `seq`, oldest first
    and unflagged, the conversation's count of removed messages when it was read (`removed`),
    the version of the newest one's row as the database gave it (`stamp`), and the texts a
    plan could admit."""

    seq: int
    removed: int
    stamp: str | None
    candidates: tuple[HistoryCandidate, ...]
    texts: Mapping[str, str]

    def holds(self, stamp: str | None) -> bool:
        """True when the newest held message's row is as it was (the read's check; the count
        of removed messages is checked before the read, with the conversation's row)."""
        return stamp == self.stamp


def candidates(
    held: Sequence[HistoryCandidate], new: Iterable[HistoryCandidate], withheld: Collection[str]
) -> list[HistoryCandidate]:
    """The history as a fresh read gives it: the held candidates then the new ones (both
    oldest first), each flagged withheld when a forget withholds it now (F6)."""
    found = [*held, *sorted(new, key=lambda c: c.seq)]
    if not withheld:
        return found
    return [c if c.withheld or c.id not in withheld else replace(c, withheld=True) for c in found]


def wanted_texts(history: Sequence[HistoryCandidate], room: int, n_recent: int) -> list[str]:
    """The ids whose text a turn reads (`turns.storage.history_sql`'s rule): newest first over
    the messages no forget withholds, those whose I3 estimates add up to at most `room` and
    the `n_recent` newest."""
    wanted: list[str] = []
    running = 0
    newest = 0
    for c in reversed(history):
        if c.withheld:
            continue
        running += estimate_from_bytes(c.n_bytes)
        newest += 1
        if running > room and newest > n_recent:
            break
        wanted.append(c.id)
    return wanted


def keep_history(
    history: Sequence[HistoryCandidate],
    texts: Mapping[str, str],
    *,
    stamp: str | None,
    room: int,
    n_recent: int,
    removed: int = 0,
) -> HeldHistory:
    """What a process keeps of the history a turn read (`history`, flagged, oldest first): its
    candidates unflagged and the texts of what the same room could admit."""
    keep = [t for t in wanted_texts(history, room, n_recent) if t in texts]
    newest = history[-1] if history else None
    return HeldHistory(
        seq=newest.seq if newest else 0,
        removed=removed,
        stamp=stamp,
        candidates=tuple(replace(c, withheld=False) if c.withheld else c for c in history),
        texts={i: texts[i] for i in keep},
    )


class HeldHistories:
    """A bounded, thread-safe LRU of `HeldHistory` by conversation id, each noted with its
    user. Entries are never changed once stored: a turn's read replaces its conversation's.
    `forget_texts` lets a user's texts go when the process learns of their forget or undo
    (F7.6: a held text may be of a message the forget withholds since)."""

    def __init__(self, size: int):
        self.size = size
        self._entries: OrderedDict[object, HeldHistory] = OrderedDict()
        self._owners: dict[object, object] = {}  # conversation -> user
        self._lock = threading.Lock()
        self.caught_up = 0  # reads that took only the messages after the held ones
        self.reread = 0  # held histories the database no longer had: read whole

    def get(self, conversation) -> HeldHistory | None:
        with self._lock:
            found = self._entries.get(conversation)
            if found is not None:
                self._entries.move_to_end(conversation)
            return found

    def put(self, conversation, entry: HeldHistory, *, user=None) -> None:
        with self._lock:
            self._entries[conversation] = entry
            self._owners[conversation] = user
            self._entries.move_to_end(conversation)
            while len(self._entries) > self.size:
                oldest, _ = self._entries.popitem(last=False)
                self._owners.pop(oldest, None)

    def drop(self, conversation) -> None:
        with self._lock:
            self._entries.pop(conversation, None)
            self._owners.pop(conversation, None)

    def forget_texts(self, user) -> None:
        """Let the histories held for `user`'s conversations go, texts and all: the next turn
        of each reads its history whole, with the texts its plan can admit, in its one
        statement — never a text a forget withholds, and no read after the pure pass."""
        with self._lock:
            for conversation in [c for c, owner in self._owners.items() if owner == user]:
                self._entries.pop(conversation, None)
                self._owners.pop(conversation, None)

    def held_texts(self) -> list[str]:
        """Every text held now (what a test walks after a forget)."""
        with self._lock:
            return [text for entry in self._entries.values() for text in entry.texts.values()]

    def note(self, *, caught_up: bool) -> None:
        with self._lock:
            if caught_up:
                self.caught_up += 1
            else:
                self.reread += 1

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._owners.clear()
