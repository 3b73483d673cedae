"""A new turn decided in one pure pass — standard library only (docs/DESIGN.md, habit 1).

The shell reads the turn's whole context once (`turns.storage.read_turn`), this module
decides everything, and the shell writes once:

1. **Learn** (SPEC §8, I8): with `learn` on, the extractor's findings become writes of one
   batch (`memory.learning`), corrections included — W1, W3–W10 in order.
2. **Resolve and project** (R1–R8, P1–P4) the context's records as the batch left them.
3. **Plan** (I1, I3, I6, I8) the turn under its parameters, when a plan was asked for.
4. **Decide** (D1–D6) each capability asked about, with the policy version read (D7).

`decide_turn` answers the writes to make, the extraction outcomes, the plan (or the
`BudgetExceeded` that refused it: the turn is still created, I7) and the decisions. Nothing
here reads the database or a clock: the ids come from `new_id`, the time is the context's
`now`, and the history's text comes with the read — under `skip` a message admitted past one
that did not fit may lie outside what was read (which messages depends on the memory section
this pass decides), and then `TurnDecided.needs_texts` names the ids whose text the shell
reads before it plans again (`plan_turn`).

Ids are drawn in the order the step-by-step path drew them (the message, the turn, each new
record in order, each logged decision), so the same state and ids give the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from config.errors import BudgetExceeded, MessageWithheld
from conversations.domain import Context
from conversations.plan_snapshot import PlanSnapshot
from memory import learning
from memory.current import KeyGroups, ResolveBasis, Resolved, resolve_keyed, slots_of
from memory.domain import RESOLVER_VERSION, MemoryRecord, Projection, Resolution, Tombstone
from memory.extract import extract
from memory.write_rules import Known, Outcome, WriteBatch, WritePlan
from policy import engine
from policy.domain import Decision, DecisionRequest, PolicyContext, Rule

from .plan_shapes import plan_snapshot
from .planner import (
    HistoryCandidate,
    Plan,
    PlanMessage,
    PlanParams,
    build_plan,
    recent_ids,
)
from .relevance import LabelTerms

REQUESTED_BY = "assistant"


@dataclass(frozen=True)
class Capability:
    name: str
    question: str


@dataclass(frozen=True)
class TurnRead:
    """Everything a new turn is decided with: the context (its `now` is the clock read after
    the locks, the message's time), the message, the user's switches, what the memory is
    resolved with (`basis`: the registry, the user's secret, P2's thresholds), the pinned
    keys, the context's memory state, the history before the message with the text read,
    the plan parameters and the policy inputs."""

    context: Context
    message: PlanMessage
    learn: bool
    use: bool
    basis: ResolveBasis
    last_named: str | None
    pinned: frozenset[str]
    scope_ids: tuple[str, ...]
    records: Sequence[MemoryRecord]
    tombstones: Sequence[Tombstone]
    retractions: Mapping[tuple[str, str, str], datetime]
    history: Sequence[HistoryCandidate]
    texts: Mapping[str, str]
    params: PlanParams | None = None
    capabilities: Sequence[Capability] = ()
    rules: Sequence[Rule] = ()
    policy_version: tuple[int, int] = (0, 0)
    # A resolution made earlier of a state these records were caught up from: each key whose
    # records are the very objects it was made of is reused while its valid times hold
    # (`memory.current.resolve_keyed`).
    resolved: Resolved | None = None
    # The terms of labels and keys the shell keeps from plan to plan (I6, `relevance.LabelTerms`).
    label_terms: LabelTerms | None = None
    # `records` by scoped key and by group of keys as the state holds them
    # (`memory.current.ContextState.by_slot`, `.by_group`); None: made here.
    by_slot: Mapping[tuple[str, str], Sequence[MemoryRecord]] | None = None
    by_group: KeyGroups | None = None


@dataclass
class TurnDecided:
    """What the pure pass decided. `resolution` and `projection` are the context's after the
    writes (for the log line); `plan` is None without plan parameters or when `refused`."""

    found: list  # the extractor's findings (memory.extract.Extraction), in order
    outcomes: list[Outcome]  # one per finding
    writes: WritePlan
    records: list[MemoryRecord]
    resolution: Resolution
    projection: Projection
    plan: Plan | None = None
    snapshot: PlanSnapshot | None = None  # what the turn stores of `plan`
    refused: BudgetExceeded | None = None
    decisions: list[tuple[str, Capability, Decision]] = field(default_factory=list)
    # E1: the state of each extracted record at the turn's time, by id
    states: dict = field(default_factory=dict)
    # `resolution` and `projection` as made key by key, for the next turn to reuse
    resolved: Resolved | None = None
    # `records` by scoped key and by group of keys as the writes left them, for the state
    # the turn keeps
    by_slot: Mapping[tuple[str, str], Sequence[MemoryRecord]] | None = None
    by_group: KeyGroups | None = None
    # The history ids the plan admits whose text the read did not hold (`plan_turn`): the
    # plan is not made until they are given.
    needs_texts: list[str] = field(default_factory=list)


class NeedTexts(Exception):  # noqa: N818 - a request for more input, not an error
    """The plan admits history messages whose text was not read."""

    def __init__(self, ids: list[str]):
        super().__init__(f"{len(ids)} history texts not read")
        self.ids = ids


def decide_turn(read: TurnRead, *, new_id: Callable[[], str]) -> TurnDecided:
    """Steps 1–4 of the module docstring. Raises a `DomainError` (`ValidationError`,
    `AuthorityConflict`) for a finding a write refuses (nothing is then written)."""
    context = read.context
    by_slot = read.by_slot if read.by_slot is not None else slots_of(read.records)
    batch = WriteBatch(
        Known(by_slot, read.tombstones, read.retractions),
        user=context.user,
        now=context.now,
        secret=read.basis.secret,
        new_id=new_id,
        complete_scopes=read.scope_ids,
    )
    outcomes: list[Outcome] = []
    found: list = []
    if read.learn:
        found = extract(read.message.content, last_named_key=read.last_named)
        learning.check(found)
        known = learning.CorrectionBasis(read.basis, read.tombstones)
        outcomes = learning.learn(
            found,
            batch,
            context=context,
            known=known,
            sources=(read.message.id,),
            source_time=context.now,
        )
    # Nothing written: the records as read, the very sequence an earlier resolution was made
    # of, in the groups the state holds; else the groups the writes touched are made again.
    records, by_group = read.records, read.by_group
    if batch.changed:
        records = batch.records()
        if by_group is not None:
            by_group = by_group.patched(len(records), batch.taken_up())
    if by_group is None:
        by_group = KeyGroups.of(records)
    resolved = resolve_keyed(
        records, read.tombstones, context, read.basis, earlier=read.resolved, by_group=by_group
    )
    decided = TurnDecided(
        found, outcomes, batch.plan, records, resolved.resolution, resolved.projection
    )
    decided.resolved = resolved
    decided.by_slot = batch.slots() if batch.changed else by_slot
    decided.by_group = by_group
    decided.states = batch.states(
        [o.record.id for o in outcomes if o.record], many_keys=read.basis.many_keys
    )
    if read.params is not None:
        plan_turn(read, decided, read.texts, new_id=new_id)
    return decided


def plan_turn(
    read: TurnRead, decided: TurnDecided, texts: Mapping[str, str], *, new_id: Callable[[], str]
) -> None:
    """Steps 3 and 4 on what `decide_turn` resolved, through `plan_prompt`: the plan and its
    snapshot (or the refusal that keeps the turn without one, I7) and, with a plan, the
    decisions. When the plan admits history whose text is not in `texts`, nothing is planned
    and `decided.needs_texts` names those ids: call it again with them."""

    def fetch_content(ids: list[str]) -> dict[str, str]:
        missing = [i for i in ids if i not in texts]
        if missing:
            raise NeedTexts(missing)
        return {i: texts[i] for i in ids}

    context = read.context
    policy_context = PolicyContext.of(context)

    def decide() -> list[tuple[str, Capability, Decision]]:
        return [
            (
                new_id(),
                capability,
                engine.decide(
                    DecisionRequest(capability=capability.name, requested_by=REQUESTED_BY),
                    read.rules,
                    policy_context,
                ),
            )
            for capability in read.capabilities
        ]

    decided.needs_texts = []
    try:
        planned = plan_prompt(
            current=read.message,
            history=read.history,
            fetch_content=fetch_content,
            resolution=decided.resolution,
            projection=decided.projection,
            params=read.params,
            pinned=read.pinned,
            use=read.use,
            now=context.now,
            decide=decide,
            described=lambda d: (d[0], d[1].name, d[2].effect),
            label_terms=read.label_terms,
        )
    except BudgetExceeded as refused:
        decided.refused = refused
        return
    except NeedTexts as needed:
        decided.needs_texts = needed.ids
        return
    decided.plan, decided.snapshot, decided.decisions = (
        planned.plan,
        planned.snapshot,
        planned.decisions,
    )


def refuse_withheld(current: PlanMessage, withheld: bool) -> None:
    """F7.1: the plan step's refusal of a current message a forget withholds — a
    `MessageWithheld` that keeps the message's id (`message_id`) and never its text."""
    if withheld:
        refused = MessageWithheld(
            "The turn's message is withheld by a forget: no prompt plan holds it."
        )
        refused.message_id = current.id
        raise refused


@dataclass(frozen=True)
class PlannedPrompt:
    """A turn's prompt plan, the snapshot the turn keeps of it, and the decisions as `decide`
    answered them (in the order of the plan's capabilities)."""

    plan: Plan
    snapshot: PlanSnapshot
    decisions: list


def plan_prompt(
    *,
    current: PlanMessage,
    history: Sequence[HistoryCandidate],
    fetch_content: Callable[[list[str]], Mapping[str, str]],
    resolution: Resolution,
    projection: Projection,
    params: PlanParams,
    pinned: frozenset[str],
    use: bool,
    now: datetime,
    decide: Callable[[], list],
    described: Callable[[object], tuple[str, str, str]],
    current_withheld: bool = False,
    label_terms: LabelTerms | None = None,
) -> PlannedPrompt:
    """The one way a turn's prompt plan is made (SPEC §7), for turn creation (I7) and for
    `GET /turns/{id}/prompt-plan` alike. The plan (`turns.planner.build_plan`: I1, I3, I6 and
    `use`, I8) of the current message over the history candidates before it, with the
    memories the resolution and projection give; under `relevance` the query's messages
    (I6) are fetched first. The budget is the planner's to check: `BudgetExceeded` when the
    message does not fit beside the memory section (I3), and nothing is decided then. Then
    the capabilities' decisions (`decide`, D1–D7) and the snapshot the turn keeps, each
    decision `described` as (id, capability, effect) (E2).

    F7.1: a current message a forget withholds (`current_withheld`: its turn was created
    before the forget) is in no plan: `refuse_withheld`, before anything is read or
    decided."""
    refuse_withheld(current, current_withheld)
    relevance = params.memory_order == "relevance"
    recent = None
    if relevance:
        newest = recent_ids(current.seq, history)
        found = fetch_content(newest)
        recent = [found[i] for i in newest]
    plan = build_plan(
        current=current,
        history=(),
        history_candidates=history,
        fetch_content=fetch_content,
        memories=projection.prompt,
        memory_excluded=(),
        memory_excluded_parts=(resolution.excluded, projection.excluded),
        params=params,
        resolver_version=RESOLVER_VERSION,
        pinned_keys=pinned if relevance else frozenset(),
        recent=recent,
        use_memories=use,
        label_terms=label_terms,
    )
    decisions = decide()
    snapshot = PlanSnapshot.made(
        plan_snapshot(plan),
        now=now,
        params={
            "budget": params.budget,
            "memory_share": params.memory_share,
            "history": params.history,
            "capabilities": list(params.capabilities),
            "memory_order": params.memory_order,
        },
        policy=[described(decision) for decision in decisions],
    )
    return PlannedPrompt(plan, snapshot, decisions)
