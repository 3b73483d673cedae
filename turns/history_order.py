"""A conversation's history as the database gives it, walked from the newest message only as far
as a plan needs (SPEC I1, I3, I6, I9) — standard library only.

The planner takes history candidates in any order and with any repeats (`turns.planner`): it
keeps one per id and sorts them, then walks all of them. A conversation's messages as the turn
reads them are already one per id, oldest first, with distinct `seq`s (unique per
conversation, I4); `InOrder` says so, and for it the planner finds the turn's boundary by
bisection and walks from the newest message back only while a message can still be admitted:
under `contiguous` to the first that does not fit, under `skip` until the room left is
smaller than any message's estimate. What it leaves unwalked is counted, and the newest of it
listed (I9: at most `LISTED` per reason), so a plan's cost follows what it holds, not the
conversation's length. Both ways give the same plan (tests/turns/core/test_history_order.py)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import attrgetter

from .tokens import MESSAGE_OVERHEAD

_seq = attrgetter("seq")


class InOrder(tuple):
    """History candidates one per id, oldest first, with strictly increasing `seq` — as the
    turn's read gives them. The planner trusts it; nothing else about them differs."""

    __slots__ = ()

    def before(self, seq: int) -> InOrder:
        """The candidates strictly before `seq` (I1), by bisection."""
        return InOrder(self[: bisect_left(self, seq, key=_seq)])


def cost(n_bytes: int) -> int:
    """`turns.tokens.estimate_from_bytes` without its argument check (the read's sizes are
    non-negative integers)."""
    return (n_bytes + 3) // 4 + MESSAGE_OVERHEAD


def walk(candidates: InOrder, available: int, policy: str, limit: int):
    """`turns.planner._select_history` on candidates in order, passing over the withheld ones
    (F6: neither admitted nor left out for the budget): answers the chosen (oldest first), the
    first `limit` dropped in the order they were tried (newest first), and how many were
    dropped in all."""
    chosen: list = []
    dropped: list = []
    n_dropped = 0
    used = 0
    i = len(candidates) - 1
    while i >= 0:
        c = candidates[i]
        if c.withheld:
            i -= 1
            continue
        if available - used < MESSAGE_OVERHEAD:
            break  # no message fits any more: every older one is dropped
        need = cost(c.n_bytes)
        i -= 1
        if used + need <= available:
            chosen.append(c)
            used += need
            continue
        n_dropped += 1
        if len(dropped) < limit:
            dropped.append(c)
        if policy == "contiguous":
            break
    # candidates[: i + 1] were not walked: each one no forget withholds is dropped
    n_dropped += _unwithheld(candidates, i + 1)
    while i >= 0 and len(dropped) < limit:
        if not candidates[i].withheld:
            dropped.append(candidates[i])
        i -= 1
    chosen.reverse()
    return chosen, dropped, n_dropped


def _unwithheld(candidates: InOrder, end: int) -> int:
    """How many of `candidates[:end]` no forget withholds, by bisection over the withheld
    ones' seqs (`withheld`)."""
    if end <= 0:
        return 0
    boundary = candidates[end - 1].seq
    return end - bisect_right(withheld(candidates), boundary, key=_seq)


def withheld(candidates: InOrder) -> list:
    """The withheld candidates (F6), oldest first."""
    return [c for c in candidates if c.withheld]


def recent(candidates: InOrder, current_seq: int, n: int) -> list[str]:
    """`turns.planner.recent_ids` on candidates in order: the ids of the last `n` candidates
    before `current_seq` that no forget withholds, newest first."""
    found: list[str] = []
    i = bisect_left(candidates, current_seq, key=_seq) - 1
    while i >= 0 and len(found) < n:
        if not candidates[i].withheld:
            found.append(candidates[i].id)
        i -= 1
    return found
