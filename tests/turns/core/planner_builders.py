"""Plain-value builders for the pure planner's tests (no database): messages, the current
message, projected memories, a plan built from them and what it kept or left out."""

from datetime import UTC, datetime

from conversations.scopes import Scope
from memory.domain import RESOLVER_VERSION, MemoryRecord, ProjectedMemory
from turns.planner import (
    Plan,
    PlanMessage,
    PlanParams,
    build_plan,
)

T0 = datetime(2026, 7, 1, tzinfo=UTC)


CODE_BLOCK = '```python\ndef f(x):\n\treturn {"a": x}  # ok\n```\n'


def msg(seq: int, content: str = "hi", *, role: str | None = None, id: str | None = None):
    return PlanMessage(
        id=id or f"m{seq}",
        seq=seq,
        role=role or ("user" if seq % 2 else "assistant"),
        content=content,
    )


def cur(seq: int = 100, content: str = "What is my plant called?", id: str = "cur"):
    return PlanMessage(id=id, seq=seq, role="user", content=content)


def mem(
    rid: str,
    value: str = "Marlowe",
    *,
    key: str = "plant.name",
    label: str = "Plant: name",
    certainty: str = "confirmed",
    scope: Scope | None = None,
) -> ProjectedMemory:
    scope = scope or Scope("user")
    record = MemoryRecord(
        id=rid,
        user="u1",
        key=key,
        value=value,
        scope=scope,
        authority="user-confirmed",
        valid_from=T0,
        recorded_at=T0,
        evidence_time=T0,
        version=1,
    )
    return ProjectedMemory(
        key=key, label=label, value=value, certainty=certainty, scope=scope, record=record
    )


def plan(
    *,
    current=None,
    history=(),
    memories=(),
    memory_excluded=(),
    budget=1000,
    share=0.3,
    policy="contiguous",
    caps=(),
    rv=RESOLVER_VERSION,
) -> Plan:
    return build_plan(
        current=current or cur(),
        history=list(history),
        memories=list(memories),
        memory_excluded=list(memory_excluded),
        params=PlanParams(budget=budget, memory_share=share, history=policy, capabilities=caps),
        resolver_version=rv,
    )


def history_ids(p: Plan) -> list[str]:
    return [m.id for m, _ in p.history]


def excluded_messages(p: Plan) -> list[str]:
    return [i for kind, i, _ in p.excluded if kind == "message"]


def excluded_memories(p: Plan) -> dict[str, str]:
    return {i: reason for kind, i, reason in p.excluded if kind == "memory"}
