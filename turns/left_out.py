"""What a prompt plan leaves out, bounded by what the plan holds (SPEC §7, I9) — standard
library only.

A plan lists, for each ``(kind, reason)``, at most :data:`LISTED` entries and counts every
entry. The listing order is the rule's: messages newest first (``seq``, then id, both
descending); memories in the fill order the plan used for ``budget`` (I3, or I6 under
``relevance``) and by id for every other reason. A reason is any string: nothing here knows
which reasons exist.

:class:`LeftOut` collects the entries while the planner iterates what it already iterates:
each entry is an id with a rank (a message's ``seq``, a memory's place in the fill order, 0
where the order is the id's alone), the same id under the same ``(kind, reason)`` once (its
first rank kept). :meth:`LeftOut.listed` then takes a bounded heap per ``(kind, reason)``
(``heapq.nsmallest`` / ``nlargest``), never a sort of everything."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from operator import itemgetter

LISTED = 20
KIND_MESSAGE = "message"
# A rank after every rank of the fill order: an id handed over without a place in it (an
# earlier step's exclusion under a reason the planner also uses) comes after, by id.
UNRANKED = float("inf")


class LeftOut:
    """Entries ``(kind, id, reason)`` left out of a plan, by ``(kind, reason)``."""

    def __init__(self, limit: int = LISTED) -> None:
        self.limit = limit
        self._groups: dict[tuple[str, str], dict[str, float]] = {}
        self._unlisted: dict[tuple[str, str], int] = {}  # counted, never handed over

    def ranked(self, kind: str, reason: str, entries: Iterable[tuple[str, float]]) -> None:
        """Add ``(id, rank)`` pairs: a message's rank is its ``seq``; a memory's its place in
        the fill order. An id already in the group keeps its first rank."""
        self._merge((kind, reason), dict(entries))

    def ranked_counted(
        self, kind: str, reason: str, entries: Iterable[tuple[str, float]], total: int
    ) -> None:
        """`ranked` for a group of which only the first entries in the rule's order are handed
        over — at least ``limit`` of them, or all — and ``total`` counts every one (a history
        walked from the newest message only as far as a plan needs; no id repeats in it)."""
        given = dict(entries)
        key = (kind, reason)
        self._merge(key, given)
        self._unlisted[key] = self._unlisted.get(key, 0) + total - len(given)

    def by_id(self, kind: str, reason: str, ids: Iterable[str], rank: float = 0) -> None:
        """Add ids that are listed in id order: all of ``rank`` 0, or ``UNRANKED`` (after the
        ranked ones)."""
        self._merge((kind, reason), dict.fromkeys(ids, rank))

    def _merge(self, key: tuple[str, str], fresh: dict[str, float]) -> None:
        kept = self._groups.get(key)
        if kept:
            fresh.update(kept)  # the first rank of an id wins
            self._groups[key] = fresh
        elif fresh:
            self._groups[key] = fresh

    def counts(self) -> tuple[tuple[str, str, int], ...]:
        """``(kind, reason, count)`` for every group, sorted by kind then reason."""
        return tuple(
            (kind, reason, len(ids) + self._unlisted.get((kind, reason), 0))
            for (kind, reason), ids in self._sorted()
        )

    def listed(self) -> tuple[tuple[str, str, str], ...]:
        """``(kind, id, reason)``: the groups sorted by kind then reason, each its first
        ``limit`` entries in the rule's order (a bounded heap over ``(rank, id)``)."""
        out: list[tuple[str, str, str]] = []
        for (kind, reason), ids in self._sorted():
            pairs = zip(ids.values(), ids.keys(), strict=True)
            first = (
                heapq.nlargest(self.limit, pairs)
                if kind == KIND_MESSAGE
                else heapq.nsmallest(self.limit, pairs)
            )
            out.extend((kind, item_id, reason) for _, item_id in first)
        return tuple(out)

    def _sorted(self) -> list[tuple[tuple[str, str], dict[str, float]]]:
        return sorted(self._groups.items(), key=itemgetter(0))
