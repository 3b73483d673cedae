"""The turn API's answers built from what the services return (SPEC §10, I7, E1): a turn
with its extraction outcomes, a prompt plan's body, and the plan parameters of a request."""

from __future__ import annotations

from config.clock import db_now
from conversations.models import Turn
from memory.domain import RESOLVER_VERSION
from memory.serializers import memory_json
from memory.state_selectors import memory_stated_many
from policy.serializers import DecisionOutput

from .planner import PlanParams, plan_body


def plan_params(params: dict | None) -> PlanParams | None:
    """The planner's parameters of a validated `plan` object (I7); None without one. A
    capability named twice is asked once."""
    if params is None:
        return None
    return PlanParams(
        budget=params["budget"], memory_share=params["memory_share"],
        history=params["history"], capabilities=tuple(dict.fromkeys(params["capabilities"])),
        memory_order=params["memory_order"])


def turn_json(turn: Turn) -> dict:
    """The turn with its extraction outcomes; memories are shown as they are now (a forget
    since then shows the erased skeleton). A turn just created carries the records its writes
    produced (`extracted_records`, exactly what a read would give), so nothing is read again."""
    ids = [e["memory"] for e in turn.extracted if e.get("memory")]
    records = getattr(turn, "extracted_records", None)
    states = getattr(turn, "extracted_states", None)
    if records is None or states is None:  # E1: a turn read again shows its memories as now
        found = memory_stated_many(turn.conversation.user, ids, now=db_now()) if ids else {}
        records = {i: m.record for i, m in found.items()}
        states = {i: m.state for i, m in found.items()}
    extracted = []
    for e in turn.extracted:
        found = e.get("memory") in records
        item = {"outcome": e["outcome"],
                "memory": memory_json(records[e["memory"]], states[e["memory"]]) if found else None}
        if e.get("reason"):
            item["reason"] = e["reason"]
        extracted.append(item)
    return {
        "id": str(turn.pk),
        "conversation": str(turn.conversation_id),
        "turn_key": turn.turn_key,
        "scene": turn.scene,
        "status": turn.status,
        "user_message": {"id": str(turn.user_message_id), "seq": turn.user_message.seq},
        "extracted": extracted,
        "learning": turn.learning,
    }


def plan_json(result) -> dict:
    """The §10 plan body of a `services.PromptPlanResult` (the GET's answer and I7's `plan`)."""
    body = {"turn": str(result.turn.pk), **plan_body(result.plan)}
    body["policy"] = [DecisionOutput(d).data for d in result.decisions]
    body["budget"] = result.params.budget
    body["resolver_version"] = RESOLVER_VERSION
    return body
