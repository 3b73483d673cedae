"""Status normalisation (SPEC W12) — pure, standard library only: which stored statuses lag
the resolver's answer, and the changes that bring them in line (run by the `memory_normalise`
command and by support; nothing in a request depends on it having run)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from memory.domain import (
    MemoryRecord,
)
from memory.resolver import unique_records


@dataclass(frozen=True, slots=True)
class StatusChange:
    """W12: one stored status to write (`expired` or `superseded`) and since when."""

    id: str
    status: str
    status_since: datetime


def _chain_depths(by_id: Mapping[str, MemoryRecord]) -> tuple[dict[str, int], set[str]]:
    """Depth of each record in its supersedes chain (0 = supersedes nothing known), and the
    ids that sit on a cycle (impossible through the services, tolerated here). Iterative, so a
    chain of 20k versions neither recurses nor rescans."""
    depth: dict[str, int] = {}
    cyclic: set[str] = set()
    for start in by_id:
        if start in depth:
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        current: str | None = start
        base = -1
        while current is not None:
            if current in depth:
                base = depth[current]
                break
            if current in on_path:
                loop_start = on_path[current]
                for member in path[loop_start:]:
                    cyclic.add(member)
                    depth[member] = 0
                path = path[:loop_start]
                base = 0
                break
            record = by_id.get(current)
            if record is None:
                break
            on_path[current] = len(path)
            path.append(current)
            current = record.supersedes
        for member in reversed(path):
            base += 1
            depth[member] = base
    return depth, cyclic


def plan_normalisation(records: Iterable[MemoryRecord], now: datetime) -> list[StatusChange]:
    """W12: the stored statuses a maintenance run may write at `now`, in a safe order.

    Pass every record of the scoped keys concerned (the supersedes chains must be complete).

    - `expired` since `valid_until`, for a record whose `valid_until <= now`;
    - `superseded` since the earliest `valid_from` of an open-ended correction (a record
      naming it in `supersedes`) whose stored status is `active` or `superseded` and whose
      `valid_from <= now`.

    Only rows stored `active` change: `forgotten` rows are never touched and a marked row is
    never re-marked, so a plan applied (wholly, or any prefix of it) and planned again at the
    same `now` gives []. If both marks apply, the one with the earlier `status_since` is
    written (`expired` on a tie): it hides the row from "skip marked rows" queries soonest.

    Why this never changes a resolution (R1–R6, any `now`), even when the database skips rows
    marked `superseded`/`expired` with `status_since <= now`:

    - `expired` since `valid_until` is exactly R3's own `valid_until <= now` test, and an
      expired row hides nothing (it fails R3), so it can be skipped.
    - A stored `superseded` since s = C.valid_from only repeats R5: for `now >= s` the
      open-ended, not forgotten correction C passes R1–R4 whenever the record does. R4 is the
      one step that could tell them apart, so a correction whose `evidence_time` is older than
      the record's is not used: a tombstone (F3) that blocks the correction then blocks the
      record too. (W1 keeps a correction in the record's slot, hence same scope, key and,
      for a `many` key, value hash; value-level tombstones exist only for `many` keys, F1.)
    - A skipped `superseded` row no longer hides what *it* supersedes, so chains are marked
      from the oldest record up: a record is marked only once its own target is `forgotten`,
      or stored `superseded`/`expired` since no later than the moment the record could
      start hiding it (max(s, its valid_from)). A target missing from `records`, or a
      supersedes cycle, blocks the `superseded` mark (the `expired` one is always safe).

    The list is ordered by chain depth (targets before the records that supersede them),
    then (valid_from, version, id).
    """
    by_id = unique_records(records)

    # Earliest usable correction per target, built once.
    corrected_since: dict[str, datetime] = {}
    for correction in by_id.values():
        target_id = correction.supersedes
        if (
            target_id is None
            or correction.valid_until is not None
            or correction.status not in ("active", "superseded")
            or correction.valid_from > now
        ):
            continue
        target = by_id.get(target_id)
        if target is None or correction.evidence_time < target.evidence_time:
            continue
        current = corrected_since.get(target_id)
        if current is None or correction.valid_from < current:
            corrected_since[target_id] = correction.valid_from

    depth, cyclic = _chain_depths(by_id)
    order = sorted(by_id.values(), key=lambda r: (depth[r.id], r.valid_from, r.version, r.id))

    state: dict[str, tuple[str, datetime | None]] = {}
    changes: list[StatusChange] = []
    for record in order:
        status, since = record.status, record.status_since
        if status == "active":
            pick: tuple[str, datetime] | None = None
            until = record.valid_until
            if until is not None and until <= now:
                pick = ("expired", until)
            start = corrected_since.get(record.id)
            if (
                start is not None
                and record.id not in cyclic
                and (pick is None or start < pick[1])
                and _target_settled(record, start, state)
            ):
                pick = ("superseded", start)
            if pick is not None:
                changes.append(StatusChange(record.id, pick[0], pick[1]))
                status, since = pick
        state[record.id] = (status, since)
    return changes


def _target_settled(
    record: MemoryRecord, start: datetime, state: Mapping[str, tuple[str, datetime | None]]
) -> bool:
    """W12 chain order: may `record` be marked superseded since `start`? Only if what it
    supersedes is already hidden by its own stored status whenever `record` could hide it."""
    target_id = record.supersedes
    if target_id is None:
        return True
    settled = state.get(target_id)
    if settled is None:
        return False
    status, since = settled
    if status == "forgotten":
        return True
    if status in ("superseded", "expired"):
        bound = start if start >= record.valid_from else record.valid_from
        return since is None or since <= bound
    return False


def apply_changes(
    records: Iterable[MemoryRecord], changes: Iterable[StatusChange]
) -> list[MemoryRecord]:
    """Apply a W12 plan to in-memory records (what the maintenance command writes), keeping
    the input order."""
    by_id = {change.id: change for change in changes}
    out = []
    for record in records:
        change = by_id.get(record.id)
        if change is None:
            out.append(record)
        else:
            out.append(replace(record, status=change.status, status_since=change.status_since))
    return out
