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
