"""What a turn keeps of its prompt plan (SPEC §7, E2) — standard library only: ids, counts,
the hash, the time and parameters it was made for and each decision as the prompt held it;
never text. One type for the plan's two makers (turn creation and `GET
/turns/{id}/prompt-plan`, through `turns.pipeline.plan_prompt`) and for every reader of a
stored plan (what a reply used, support's plan and explain pages, F6's withholding), so the
stored shape is written and read in one place.

Stored snapshots come from every version of the service and from imports (§9), so reading
one (`PlanSnapshot.of`) keeps what has the expected shape and skips the rest: an id that is
not a string, an exclusion or a decision that is not three strings (an exclusion may also be
in the plan's own shape, `{"kind", "id", "reason"}`), a certainty list that does not match
the memories, a count that is not `(kind, reason, count)` with a count of at least 0.

What was left out (I9) comes in two generations. A snapshot made since I9 lists at most 20
entries per `(kind, reason)` and keeps every total in `excluded_counts`; an older one listed
every entry and kept no counts, so its totals are what it lists. Either way
`left_out_counts` gives every total and `not_listed` what each reader says as "and N more"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class PlanSnapshot:
    boundary_seq: int | None = None
    current: str | None = None  # the turn's message
    history: tuple[str, ...] = ()  # the history messages given, oldest first
    memories: tuple[str, ...] = ()  # the memory records given, in fill order
    # E2: each given memory's certainty, aligned with `memories` ("" where the plan predates it)
    certainty: tuple[str, ...] = ()
    excluded: tuple[tuple[str, str, str], ...] = ()  # (kind, id, reason), as listed
    estimated_tokens: int | None = None
    plan_hash: str = ""
    now: str | None = None  # ISO 8601: the time the plan was made for
    params: Mapping = field(default_factory=dict)
    decisions: tuple[str, ...] = ()  # decision ids
    policy: tuple[tuple[str, str, str], ...] = ()  # E2: (decision id, capability, effect)
    # I9: (kind, reason, count) of every entry left out; () in a snapshot stored before I9
    excluded_counts: tuple[tuple[str, str, int], ...] = ()

    @classmethod
    def made(
        cls,
        plan: Mapping,
        *,
        now: datetime,
        params: Mapping,
        policy: Sequence[tuple[str, str, str]],
    ) -> PlanSnapshot:
        """A new plan's snapshot: `plan` is the planner's part (`turns.planner.plan_snapshot`:
        the ids, counts and hash), `policy` each decision as (id, capability, effect)."""
        return cls(
            plan["boundary_seq"],
            plan["current"],
            tuple(plan["history"]),
            tuple(plan["memories"]),
            tuple(plan["certainty"]),
            tuple(map(tuple, plan["excluded"])),
            plan["estimated_tokens"],
            plan["plan_hash"],
            now.isoformat(),
            dict(params),
            tuple(decision for decision, _, _ in policy),
            tuple(tuple(item) for item in policy),
            tuple(map(tuple, plan["excluded_counts"])),
        )

    def stored(self) -> dict:
        """The JSON a turn stores (`Turn.plan_snapshot`)."""
        return {
            "boundary_seq": self.boundary_seq,
            "current": self.current,
            "history": list(self.history),
            "memories": list(self.memories),
            "certainty": list(self.certainty),
            "excluded": list(map(list, self.excluded)),
            "estimated_tokens": self.estimated_tokens,
            "plan_hash": self.plan_hash,
            "now": self.now,
            "params": dict(self.params),
            "decisions": list(self.decisions),
            "policy": [list(item) for item in self.policy],
            "excluded_counts": list(map(list, self.excluded_counts)),
        }

    @classmethod
    def of(cls, stored) -> PlanSnapshot | None:
        """A stored snapshot read back (None: the turn has no plan); a `PlanSnapshot` as it is."""
        if isinstance(stored, PlanSnapshot) or stored is None:
            return stored
        if not isinstance(stored, Mapping) or not stored:
            return None
        memories = _strings(stored.get("memories"))
        certainty = stored.get("certainty") or []
        certainty = (
            tuple(c if isinstance(c, str) else "" for c in certainty)
            if isinstance(certainty, list) and len(certainty) == len(memories)
            else ("",) * len(memories)
        )
        current = stored.get("current")
        params = stored.get("params")
        tokens = stored.get("estimated_tokens")
        seq = stored.get("boundary_seq")
        return cls(
            boundary_seq=seq if isinstance(seq, int) else None,
            current=current if isinstance(current, str) and current else None,
            history=_strings(stored.get("history")),
            memories=memories,
            certainty=certainty,
            excluded=tuple(_excluded(stored.get("excluded"))),
            estimated_tokens=tokens if isinstance(tokens, int) else None,
            plan_hash=stored.get("plan_hash") if isinstance(stored.get("plan_hash"), str) else "",
            now=stored.get("now") if isinstance(stored.get("now"), str) else None,
            params=params if isinstance(params, Mapping) else {},
            decisions=_strings(stored.get("decisions")),
            policy=tuple(
                tuple(item) for item in stored.get("policy") or [] if _three_strings(item)
            ),
            excluded_counts=tuple(_counts(stored.get("excluded_counts"))),
        )

    @property
    def capabilities(self) -> list[str]:
        """The capabilities the plan asked about (its parameters)."""
        found = self.params.get("capabilities") or []
        return [c for c in found if isinstance(c, str)] if isinstance(found, list) else []

    def left_out_counts(self) -> dict[tuple[str, str], int]:
        """Every total left out by `(kind, reason)`, sorted: the stored counts (never fewer
        than the entries listed), or for a snapshot stored before them, the entries it lists
        (it listed every one)."""
        listed = self._listed()
        counts = dict(listed)
        for kind, reason, n in self.excluded_counts:
            counts[kind, reason] = max(n, listed.get((kind, reason), 0))
        return {key: counts[key] for key in sorted(counts) if counts[key]}

    def not_listed(self) -> list[tuple[str, str, int]]:
        """`(kind, reason, n)` for each `(kind, reason)` with `n` entries counted but not
        listed ("and n more"), sorted by kind then reason."""
        listed = self._listed()
        return [
            (kind, reason, n - listed.get((kind, reason), 0))
            for (kind, reason), n in self.left_out_counts().items()
            if n > listed.get((kind, reason), 0)
        ]

    def _listed(self) -> dict[tuple[str, str], int]:
        listed: dict[tuple[str, str], int] = {}
        for kind, _, reason in self.excluded:
            listed[kind, reason] = listed.get((kind, reason), 0) + 1
        return listed

    def memory_ids(self) -> list[str]:
        """Every memory id the plan names (given or left out), once each, in order."""
        left = [item_id for kind, item_id, _ in self.excluded if kind == "memory"]
        return list(dict.fromkeys([*self.memories, *left]))

    def undescribed_decisions(self) -> list[str]:
        """The decision ids the plan names without their capability and effect (a snapshot
        stored before it kept them)."""
        described = {row[0] for row in self.policy}
        return [i for i in self.decisions if i not in described]


def _strings(found) -> tuple[str, ...]:
    return tuple(i for i in found if isinstance(i, str)) if isinstance(found, list) else ()


def _three_strings(item) -> bool:
    return (
        isinstance(item, list | tuple)
        and len(item) == 3
        and all(isinstance(part, str) for part in item)
    )


def _counts(found) -> list[tuple[str, str, int]]:
    out = []
    for item in found if isinstance(found, list) else []:
        if isinstance(item, Mapping):
            item = (item.get("kind"), item.get("reason"), item.get("count"))
        if (
            isinstance(item, list | tuple)
            and len(item) == 3
            and isinstance(item[0], str)
            and isinstance(item[1], str)
            and isinstance(item[2], int)
            and not isinstance(item[2], bool)
            and item[2] >= 0
        ):
            out.append(tuple(item))
    return out


def _excluded(found) -> list[tuple[str, str, str]]:
    out = []
    for item in found if isinstance(found, list) else []:
        if isinstance(item, Mapping):
            item = (item.get("kind"), item.get("id", ""), item.get("reason"))
        if _three_strings(item):
            out.append(tuple(item))
    return out
