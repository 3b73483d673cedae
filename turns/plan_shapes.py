"""A plan's two JSON shapes (SPEC §7, §10): the planner's part of the answer a runtime reads
(`plan_body`) and of the snapshot a turn stores (`plan_snapshot`, ids and counts, never text).
Pure: the standard library only."""

from __future__ import annotations

from .planner import Plan


def plan_snapshot(plan: Plan) -> dict:
    """The planner's part of what a turn stores (`conversations.plan_snapshot.PlanSnapshot`
    makes the stored JSON of it): ids, counts and the hash, never text (SPEC §7)."""
    return {
        "boundary_seq": plan.boundary_seq,
        "current": plan.current.id,
        "history": [m.id for m, _ in plan.history],
        "memories": [pm.record.id for pm in plan.memories],
        # SPEC E2: the certainty each memory was given with, beside its id (no text).
        "certainty": [pm.certainty for pm in plan.memories],
        # I9: (kind, id, reason) triples, at most 20 per (kind, reason), and every total as
        # (kind, reason, count); both stored as JSON arrays
        "excluded": plan.excluded,
        "excluded_counts": plan.excluded_counts,
        "estimated_tokens": plan.estimated_tokens,
        "plan_hash": plan.plan_hash,
    }


def plan_body(plan: Plan) -> dict:
    """The planner's part of the §10 plan JSON (the view adds ``turn``, ``policy``,
    ``budget`` and ``resolver_version``)."""
    return {
        "boundary_seq": plan.boundary_seq,
        "current_message": {
            "id": plan.current.id,
            "seq": plan.current.seq,
            "content": plan.current.content,
            "estimated_tokens": plan.current_tokens,
        },
        "history": [
            {
                "id": m.id,
                "seq": m.seq,
                "role": m.role,
                "content": m.content,
                "estimated_tokens": tokens,
            }
            for m, tokens in plan.history
        ],
        "memories": [
            {**pm.as_prompt(), "relevance": score}
            for pm, score in zip(plan.memories, _relevance_of(plan), strict=True)
        ],
        "excluded": [
            {"kind": kind, "id": item_id, "reason": reason}
            for kind, item_id, reason in plan.excluded
        ],
        "excluded_counts": [
            {"kind": kind, "reason": reason, "count": n} for kind, reason, n in plan.excluded_counts
        ],
        "estimated_tokens": plan.estimated_tokens,
        "memory_order": plan.memory_order,
        "plan_hash": plan.plan_hash,
    }


def _relevance_of(plan: Plan) -> tuple[float | None, ...]:
    return (
        plan.relevance
        if len(plan.relevance) == len(plan.memories)
        else (None,) * len(plan.memories)
    )
