"""The prompt plan of a stored turn (SPEC §7, I1–I6, I8): `GET /turns/{id}/prompt-plan` and the
plan a replayed creation answers (I7)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from config.clock import db_now
from config.errors import BudgetExceeded, MessageWithheld, NotFound
from conversations.models import Turn
from conversations.selectors import LoadedContext
from memory.selectors.resolution import ContextResolution
from memory.switches import memory_settings_of
from memory.withholding import withheld_exists, withheld_message_ids
from policy.services import DecisionOutcome, decisions_make

from .pipeline import plan_prompt, refuse_withheld
from .planner import QUERY_HISTORY, Plan, PlanMessage, PlanParams
from .selectors import history_with_contents
from .tokens import estimate_message

log = logging.getLogger("companion.conversations")


@dataclass
class PromptPlanResult:
    turn: Turn
    plan: object  # planner.Plan
    decisions: list
    params: object  # planner.PlanParams


def turn_prompt_plan(
    *,
    turn_id,
    budget: int,
    memory_share: float = 0.3,
    history: str = "contiguous",
    capabilities: tuple[str, ...] = (),
    now=None,
    user=None,
    memory_order: str = "certainty",
) -> PromptPlanResult:
    """SPEC §7: the prompt plan of a turn (`GET /turns/{id}/prompt-plan`): the turn is read
    with its conversation, user (and memory profile), character and user message — and
    whether a forget withholds that message (F7.1) — in one query, then planned by
    `plan_for_turn`."""
    qs = (
        Turn.objects.select_related(
            "conversation__character", "conversation__user__memory_profile", "user_message"
        )
        .annotate(message_withheld=withheld_exists("user_message_id"))
        .filter(pk=turn_id)
    )
    if user is not None:
        qs = qs.filter(user=user)
    turn = qs.first()
    if turn is None:
        raise NotFound("No such turn.")
    return plan_for_turn(
        turn,
        budget=budget,
        memory_share=memory_share,
        history=history,
        capabilities=capabilities,
        now=now,
        memory_order=memory_order,
    )


def plan_for_turn(
    turn: Turn,
    *,
    budget: int,
    memory_share: float = 0.3,
    history: str = "contiguous",
    capabilities: tuple[str, ...] = (),
    now=None,
    memory_order: str = "certainty",
    now_given: bool | None = None,
) -> PromptPlanResult:
    """SPEC §7: the prompt plan of a loaded turn — history before the turn's message under the
    budget (I1, I3), the memories through the resolver and projection (I2, I5) in the chosen
    order (I6), and policy decisions for the requested capabilities. The turn keeps the
    plan's ids and hash. The user's `use` switch (I8) comes with the user's profile.

    Reads nothing the turn carries: `turn.conversation` (with its user, the user's memory
    profile and its character) and `turn.user_message` must be loaded — by the GET's one
    query, or by turn creation itself (I7: the one round trip plans the turn it just created
    or replayed without reading it again). Queries: the memory read (records with their
    sources; tombstones with the secret; the registry), one for the history (candidates with
    the text of the newest messages the budget could admit, and of the two the relevance
    query takes), the policy decisions when capabilities are asked for, and the turn's
    snapshot update. Under `skip` a message admitted past the first one that did not fit
    costs one more query for its text.

    `now` defaults to the database clock; `now_given` says whether the caller chose it (the
    GET's `now`), as `LoadedContext.now_given`.

    F7.1: a turn whose message a forget withholds has no plan: `MessageWithheld` naming the
    turn, from the plan step, before the history is read. Whether it is withheld comes with
    the turn where its read annotated it (`message_withheld`), else one query more."""
    params = PlanParams(
        budget=budget,
        memory_share=memory_share,
        history=history,
        capabilities=tuple(dict.fromkeys(capabilities)),
        memory_order=memory_order,
    )
    conversation = turn.conversation
    current = turn.user_message
    withheld = getattr(turn, "message_withheld", None)
    if withheld is None:
        withheld = str(current.pk) in withheld_message_ids(
            user=conversation.user, message_ids=[current.pk]
        )
    message = PlanMessage(str(current.pk), current.seq, current.role, current.content)
    try:
        refuse_withheld(message, withheld)
    except MessageWithheld as refused:
        refused.extra["turn"] = str(turn.pk)
        raise
    ctx = LoadedContext(
        user=conversation.user,
        character=conversation.character,
        conversation=conversation,
        scene=turn.scene,
        now=now if now is not None else db_now(),
        now_given=(now is not None) if now_given is None else now_given,
    )
    switches = memory_settings_of(conversation.user)
    resolved = ContextResolution(ctx)
    # The history's text is read with its sizes for the newest messages that could fit
    # beside the current message (what the planner admits is among them under `contiguous`).
    room = budget - estimate_message(current.content)
    candidates, fetch_content = history_with_contents(
        conversation, current.seq, room, QUERY_HISTORY if memory_order == "relevance" else 0
    )

    def decide() -> list[DecisionOutcome]:
        if not params.capabilities:
            return []
        return decisions_make(context=ctx, capabilities=list(params.capabilities))

    planned = plan_prompt(
        current=message,
        history=candidates,
        fetch_content=fetch_content,
        resolution=resolved.resolution,
        projection=resolved.projection,
        params=params,
        pinned=resolved.registry.pinned_keys,
        use=switches.use,
        now=ctx.now,
        decide=decide,
        described=lambda d: (d.decision_id, d.capability, d.decision.effect),
    )
    stored, plan_hash = planned.snapshot.stored(), planned.snapshot.plan_hash
    Turn.objects.filter(pk=turn.pk).update(plan_snapshot=stored, plan_hash=plan_hash)
    turn.plan_snapshot, turn.plan_hash = stored, plan_hash
    log_plan(turn.pk, resolved.log_line(), planned.plan, params, use=switches.use)
    return PromptPlanResult(turn, planned.plan, planned.decisions, params)


def log_plan(turn_id, resolve_line: str, plan: Plan, params: PlanParams, *, use: bool) -> None:
    """SPEC §12: a plan's ids, counts and hash with its resolve's — never text. One line per
    plan made, by turn creation or by the GET."""
    log.info(
        "prompt_plan turn=%s %s history=%d memories=%d excluded=%d tokens=%d budget=%d "
        "memory_order=%s memory_use=%s plan_hash=%s",
        turn_id,
        resolve_line,
        len(plan.history),
        len(plan.memories),
        sum(n for _, _, n in plan.excluded_counts),
        plan.estimated_tokens,
        params.budget,
        params.memory_order,
        "on" if use else "off",
        plan.plan_hash,
    )


def turn_plan_replayed(result, plan: PlanParams):
    """I7: a replayed creation answers a plan computed now, from the rows creation loaded. A
    plan refused for its budget says which turn stays created; a turn whose message a forget
    withholds since has none (F7.1: `MessageWithheld`)."""
    turn = result.turn
    try:
        return plan_for_turn(
            turn,
            budget=plan.budget,
            memory_share=plan.memory_share,
            history=plan.history,
            capabilities=plan.capabilities,
            memory_order=plan.memory_order,
            now=None,
            now_given=False,
        )
    except BudgetExceeded as exc:
        exc.extra["turn"] = str(turn.pk)
        raise
