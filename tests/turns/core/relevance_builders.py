"""Plain-value builders for the relevance order's tests (no database): projected memories, the
current message, a plan built from them and the ids of its memory section."""

import hashlib
import json
from datetime import UTC, datetime

from conversations.scopes import Scope
from memory.domain import RESOLVER_VERSION, MemoryRecord, ProjectedMemory
from turns.planner import PlanMessage, PlanParams, build_plan

T0 = datetime(2026, 7, 1, tzinfo=UTC)


def mem(
    rid: str,
    value: str,
    *,
    key: str,
    label: str | None = None,
    certainty: str = "likely",
    at: datetime = T0,
) -> ProjectedMemory:
    record = MemoryRecord(
        id=rid,
        user="u1",
        key=key,
        value=value,
        scope=Scope("user"),
        authority="rule-extracted",
        valid_from=at,
        recorded_at=at,
        evidence_time=at,
        version=1,
        sources=("m0",),
    )
    return ProjectedMemory(
        key=key,
        label=label or key,
        value=value,
        certainty=certainty,
        scope=Scope("user"),
        record=record,
    )


def cur(content: str, seq: int = 100) -> PlanMessage:
    return PlanMessage("cur", seq, "user", content)


def plan(
    memories,
    *,
    content="Tell me about the letter.",
    history=(),
    budget=10_000,
    share=0.3,
    order="relevance",
    pinned=frozenset(),
    use=True,
    excluded=(),
):
    return build_plan(
        current=cur(content),
        history=list(history),
        memories=list(memories),
        memory_excluded=list(excluded),
        params=PlanParams(budget=budget, memory_share=share, memory_order=order),
        resolver_version=RESOLVER_VERSION,
        pinned_keys=pinned,
        use_memories=use,
    )


def ids(p) -> list[str]:
    return [pm.record.id for pm in p.memories]


def legacy_hash(p, params: PlanParams) -> str:
    """The plan hash exactly as I3 defined it before the relevance order existed."""
    payload = {
        "current": {
            "id": p.current.id,
            "seq": p.current.seq,
            "role": p.current.role,
            "content": p.current.content,
        },
        "history": [
            {"id": m.id, "seq": m.seq, "role": m.role, "content": m.content} for m, _ in p.history
        ],
        "memories": [{"id": pm.record.id, **pm.as_prompt()} for pm in p.memories],
        "params": {
            "budget": params.budget,
            "memory_share": float(params.memory_share),
            "history": params.history,
            "capabilities": sorted(set(params.capabilities)),
        },
        "resolver_version": RESOLVER_VERSION,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
