"""The prompt plan of a stored turn (SPEC §7, I1–I9): `GET /turns/{id}/prompt-plan` and the
plan a replayed creation answers (I7), both on the one turn path (`turns.turn_path`) — the
same read, pure pass and writer as a new turn, writing only the turn's snapshot and the
decision log."""

from __future__ import annotations

from dataclasses import dataclass

from config.errors import MessageWithheld, NotFound
from conversations.models import Turn
from memory.services import ensure_profile
from memory.withholding import withheld_exists
from policy.selectors import capabilities_by_name

from . import pipeline, turn_path
from .planner import PlanMessage, PlanParams


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
    whether a forget withholds that message (F7.1) — in one query, then planned on the turn
    path at `now` (default: the read's clock). Unknown capabilities are refused before
    anything is read (C2)."""
    params = PlanParams(
        budget=budget,
        memory_share=memory_share,
        history=history,
        capabilities=tuple(dict.fromkeys(capabilities)),
        memory_order=memory_order,
    )
    found = capabilities_by_name(list(params.capabilities)) if params.capabilities else {}
    asked = tuple(pipeline.Capability(c.name, c.question) for c in found.values())
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
    return plan_stored_turn(turn, params, asked, now=now)


def plan_stored_turn(
    turn: Turn,
    params: PlanParams,
    capabilities: tuple[pipeline.Capability, ...],
    *,
    now=None,
) -> PromptPlanResult:
    """A stored turn's plan on the turn path: `turn` is loaded with its conversation (its
    user, the user's memory profile and its character), its user message and whether a forget
    withholds that message (`message_withheld`, F7.1: then `MessageWithheld` naming the turn,
    before anything is read). The turn keeps the plan's snapshot and hash; the decisions are
    logged. A plan refused for its budget raises `BudgetExceeded` (nothing is written)."""
    conversation = turn.conversation
    current = turn.user_message
    message = PlanMessage(str(current.pk), current.seq, current.role, current.content)
    try:
        pipeline.refuse_withheld(message, bool(turn.message_withheld))
    except MessageWithheld as refused:
        refused.extra["turn"] = str(turn.pk)
        raise
    if not hasattr(conversation.user, "memory_profile"):
        ensure_profile(conversation.user)  # a user made outside `user_put`
    ask = turn_path.TurnAsk(
        conversation=conversation,
        current=message,
        scene=turn.scene,
        plan=params,
        capabilities=capabilities,
        creates=False,
        now=now,
    )
    taken = turn_path.take(ask, turn=turn)
    if taken.decided.refused is not None:
        raise taken.decided.refused
    turn_path.log(taken)
    return PromptPlanResult(
        turn, taken.decided.plan, turn_path.outcomes(taken.read, taken.decided), params
    )
