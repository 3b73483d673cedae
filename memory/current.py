"""A context's memory as the pure pass takes it — standard library only (docs/DESIGN.md,
habit 1): the stored state of the context's scopes and the resolution made of it.

`memory.state` owns the per-process copy of both (read once at a memory version, kept after a
turn's writes); the turn's pure pass (`turns.pipeline`) resolves through `resolve_context`,
which answers an earlier resolution again while it still holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from conversations.domain import Context

from .domain import MemoryRecord, Projection, Resolution, Tombstone
from .projection import project
from .resolver import at_time, resolve, stable_window


@dataclass(frozen=True)
class ContextState:
    """Every stored record of a context's scopes (forgotten skeletons included, sources
    included), every tombstone of the user, and the latest W10 time per slot of those scopes:
    what a resolve for the context reads and what any write into those scopes needs."""

    records: list[MemoryRecord]
    tombstones: list[Tombstone]
    retractions: dict[tuple[str, str, str], datetime]


EMPTY = ContextState([], [], {})


def caught_up(state: ContextState, changed: ContextState) -> ContextState:
    """`state` with the rows changed after the version it was kept at (`changed`: the
    records and tombstones inserted or updated since, the retractions added since): a row
    of an id already held replaces it where it stood, a new one comes last, a slot's
    retraction time is the latest of both. Unchanged rows stay the very objects they were,
    so a resolution of them is reused (`resolve_context`). Rows removed since are not
    changes this can make: the state is then read again whole (`memory.triggers`)."""
    records = _replaced(state.records, changed.records)
    tombstones = _replaced(state.tombstones, changed.tombstones)
    retractions = state.retractions
    if changed.retractions:
        retractions = dict(retractions)
        for slot, at in changed.retractions.items():
            held = retractions.get(slot)
            if held is None or at > held:
                retractions[slot] = at
    return ContextState(records, tombstones, retractions)


def _replaced(held: list, changed: list) -> list:
    if not changed:
        return held
    by_id = {row.id: row for row in changed}
    kept = [by_id.pop(row.id, row) for row in held]
    return kept + [row for row in changed if row.id in by_id]


@dataclass(frozen=True)
class Resolved:
    """A resolution and projection of some records made at a time of `window`, the valid
    times `[lo, hi)` over which they answer as they did (`memory.resolver.stable_window`)."""

    window: tuple[datetime | None, datetime | None]
    resolution: Resolution
    projection: Projection

    @classmethod
    def made(
        cls,
        records: Sequence[MemoryRecord],
        now: datetime,
        resolution: Resolution,
        projection: Projection,
    ) -> Resolved:
        return cls(stable_window(records, now), resolution, projection)

    def at(self, now: datetime) -> tuple[Resolution, Projection] | None:
        """The same answer at `now` when `now` lies in the window (R3 and R5 are the only
        steps that look at `now`), else None."""
        lo, hi = self.window
        if (lo is not None and now < lo) or (hi is not None and now >= hi):
            return None
        return at_time(self.resolution, now), self.projection


def resolve_context(
    records: Sequence[MemoryRecord],
    tombstones: Sequence[Tombstone],
    context: Context,
    *,
    many_keys: frozenset[str],
    labels: Mapping[str, str],
    secret: bytes,
    likely: float,
    uncertain: float,
    earlier: Resolved | None = None,
) -> tuple[Resolution, Projection]:
    """R1–R8 and P1–P4 for the context: `earlier` answered again when it is a resolution of
    these very records and holds at the context's time, else `resolve` and `project`."""
    if earlier is not None:
        reused = earlier.at(context.now)
        if reused is not None:
            return reused
    resolution = resolve(records, tombstones, context, many_keys=many_keys, secret=secret)
    projection = project(
        resolution.active, labels=labels, many_keys=many_keys, likely=likely, uncertain=uncertain
    )
    return resolution, projection
