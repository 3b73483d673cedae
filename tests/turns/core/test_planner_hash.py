"""The pure prompt planner's `plan_hash`, snapshot and body (SPEC §7 I5): the same state
hashes the same way, any change of state or parameters changes it, the snapshot holds ids
without text. No database."""

import json

import pytest

from conversations.scopes import Scope
from memory.domain import RESOLVER_VERSION
from tests.turns.core.planner_builders import (
    cur,
    mem,
    msg,
    plan,
)
from turns.plan_shapes import plan_body, plan_snapshot
from turns.planner import PlanParams, compute_plan_hash
from turns.tokens import estimate_message

BASE = {
    "history": [msg(1, "one"), msg(2, "two"), msg(3, "three")],
    "memories": [mem("r1"), mem("r2", "Sage", key="pet.name", label="Pet: name")],
    "budget": 1000,
}


def test_it_hashes_the_same_state_the_same_way():
    """I3: same state and parameters → same hash, whatever the input order of history, the
    order or duplicates of capabilities, and whatever the resolver excluded (those depend on
    `now`); decision ids are no input at all."""
    a = plan(**BASE, caps=("photo", "voice"), memory_excluded=[("r9", "expired")])
    b = plan(
        **{**BASE, "history": list(reversed(BASE["history"]))},
        caps=("voice", "photo", "voice"),
        memory_excluded=[("r9", "not-yet-valid")],
    )
    assert a.plan_hash == b.plan_hash
    assert len(a.plan_hash) == 64 and int(a.plan_hash, 16) >= 0
    assert a.plan_hash == compute_plan_hash(
        current=a.current,
        history=[m for m, _ in a.history],
        memories=a.memories,
        params=PlanParams(budget=1000, capabilities=("voice", "photo")),
        resolver_version=RESOLVER_VERSION,
    )


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"current": cur(content="What is my pet called?")}, id="current-content"),
        pytest.param({"current": cur(id="cur2")}, id="current-id"),
        pytest.param(
            {"history": [msg(1, "one"), msg(2, "TWO"), msg(3, "three")]}, id="history-content"
        ),
        pytest.param({"history": [msg(1, "one"), msg(3, "three")]}, id="history-ids"),
        pytest.param({"memories": [mem("r1", "Harbor"), BASE["memories"][1]]}, id="memory-value"),
        pytest.param(
            {"memories": [mem("r1", certainty="likely"), BASE["memories"][1]]},
            id="memory-certainty",
        ),
        pytest.param(
            {
                "memories": [
                    mem("r1", scope=Scope("character", character="ava")),
                    BASE["memories"][1],
                ]
            },
            id="memory-scope",
        ),
        pytest.param({"memories": list(reversed(BASE["memories"]))}, id="memory-order"),
        pytest.param({"budget": 999}, id="budget"),
        pytest.param({"share": 0.31}, id="memory-share"),
        pytest.param({"policy": "skip"}, id="history-policy"),
        pytest.param({"caps": ("photo",)}, id="capabilities"),
        pytest.param({"rv": "resolver-next"}, id="resolver-version"),
    ],
)
def test_it_changes_the_hash_when_state_or_params_change(change):
    """I3: the hash covers ids, content, memory items, parameters and resolver_version."""
    assert plan(**{**BASE, **change}).plan_hash != plan(**BASE).plan_hash


def test_it_snapshots_ids_without_text():
    """§7: the turn keeps the plan's ids and hash, never message or memory text; I9: with
    what was left out, bounded, and every total."""
    p = plan(
        **{**BASE, "history": [msg(1, "secret " * 400), *BASE["history"][1:]], "budget": 300},
        memory_excluded=[("r9", "unsupported")],
    )
    snap = plan_snapshot(p)
    assert snap == {
        "boundary_seq": 100,
        "current": "cur",
        "history": ["m2", "m3"],
        "memories": ["r1", "r2"],
        "certainty": [p.memories[0].certainty, p.memories[1].certainty],
        "excluded": (("memory", "r9", "unsupported"), ("message", "m1", "budget")),
        "excluded_counts": (("memory", "unsupported", 1), ("message", "budget", 1)),
        "estimated_tokens": p.estimated_tokens,
        "plan_hash": p.plan_hash,
    }
    text = json.dumps(snap)
    for secret in ("secret", "two", "three", "Marlowe", "Sage", cur().content):
        assert secret not in text


def test_it_renders_the_plan_body():
    """§10: the planner's part of the plan JSON, with per-message estimates."""
    p = plan(**BASE)
    body = plan_body(p)
    assert body["current_message"] == {
        "id": "cur",
        "seq": 100,
        "content": cur().content,
        "estimated_tokens": p.current_tokens,
    }
    assert [h["id"] for h in body["history"]] == ["m1", "m2", "m3"]
    assert body["history"][1] == {
        "id": "m2",
        "seq": 2,
        "role": "assistant",
        "content": "two",
        "estimated_tokens": estimate_message("two"),
    }
    # I6: plan memories carry `relevance`, null under the default `certainty` order.
    assert body["memories"][0] == {**mem("r1").as_prompt(), "relevance": None}
    assert body["memory_order"] == "certainty"
    assert body["estimated_tokens"] == p.estimated_tokens
    assert body["plan_hash"] == p.plan_hash
