"""SPEC §10 C2: a request answered 400 stored nothing. For every write operation, refused
requests — an unknown field (C1) and the refusals its service makes after reading the
database — leave the row count of every table as it was; the turn refused for its plan is
created by the retry with the same `turn_key` (201)."""

import pytest
from django.db import connection

from tests.contract.world import build

pytestmark = pytest.mark.django_db

# The rate counters count every request, refused ones too (SPEC O4), and the cache holds
# them: neither is data a request stores.
NOT_DATA = {"config_throttlewindow", "companion_cache"}


def row_counts() -> dict[str, int]:
    counts = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if table in NOT_DATA:
                continue
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def refusals(w):
    """(method, path, body) of refused requests, per write operation."""
    from memory.models import MemoryRecord
    from policy.models import MediaJob

    conv = w.conversations[0]
    turn = w.turns[-1]
    memory = str(MemoryRecord.objects.filter(user__username=w.ref).order_by("-recorded_at")[0].pk)
    job = str(MediaJob.objects.filter(user__username=w.ref)[0].pk)
    ask = [d for d in w.decisions if d["effect"] == "ask"][0]["decision_id"]
    allow = w.call(
        "post",
        "/policy/decide",
        {"context": w.ctx(0), "capability": "tone.playful", "requested_by": "user"},
    ).json()
    ctx = w.ctx(0)
    user_scope = {"kind": "user"}
    snapshot = w.call("get", f"/users/{w.ref}/export").json()
    bad_snapshot = {**snapshot, "memories": [{**snapshot["memories"][0], "key": "a..b"}]}
    return [
        ("put", "/users/newcomer", {"nickname": "x"}),
        ("put", "/characters/newcomer", {"name": "N", "mood": "x"}),
        ("put", "/characters/newcomer", {"name": "   "}),
        ("post", "/conversations", {"user": w.ref, "character": "rowan", "topic": "x"}),
        ("post", "/conversations", {"user": "nobody", "character": "rowan"}),
        ("post", f"/conversations/{conv}/turns", {"turn_key": "k", "content": "Hi", "extra": 1}),
        (
            "post",
            f"/conversations/{conv}/turns",
            {
                "turn_key": "k",
                "content": "I like tea.",
                "plan": {"budget": 500, "capabilities": ["no.such"]},
            },
        ),
        (
            "post",
            f"/conversations/{conv}/turns",
            {"turn_key": "k", "content": "I like tea.", "plan": {"budget": 0}},
        ),
        ("post", f"/turns/{turn}/reply", {"content": "Ok", "tone": "x"}),
        ("post", "/memories", {"user": w.ref, "key": "a..b", "value": "v", "scope": user_scope}),
        (
            "post",
            "/memories",
            {
                "user": w.ref,
                "key": "pet.name",
                "value": "v",
                "scope": user_scope,
                "valid_from": "2030-01-02T00:00:00Z",
                "valid_until": "2030-01-01T00:00:00Z",
            },
        ),
        (
            "post",
            "/memories",
            {
                "user": w.ref,
                "key": "pet.name",
                "value": "v",
                "scope": {"kind": "user", "character": "rowan"},
            },
        ),
        (
            "post",
            "/memories",
            {
                "user": w.ref,
                "key": "pet.name",
                "value": "v",
                "scope": user_scope,
                "sources": ["00000000-0000-4000-8000-000000000000"],
            },
        ),
        ("post", f"/memories/{memory}/confirm", {"why": "x"}),
        ("post", f"/memories/{memory}/correct", {"value": "x", "why": "x"}),
        ("post", f"/memories/{memory}/retract", {"why": "x"}),
        ("post", f"/memories/{memory}/forget", {"everywhere": "maybe"}),
        ("post", "/memory/remember", {"context": ctx, "text": "I like tea.", "tone": 1}),
        (
            "post",
            "/memory/remember",
            {"context": {**ctx, "character": "lark"}, "text": "I like tea."},
        ),
        ("post", "/memory/resolve", {"context": ctx, "extra": 1}),
        ("put", f"/users/{w.ref}/memory-settings", {"learn": "yes"}),
        (
            "post",
            "/policy/decide",
            {"context": ctx, "capability": "no.such", "requested_by": "user"},
        ),
        (
            "post",
            "/policy/rules",
            {
                "user": w.ref,
                "capability": "tone.playful",
                "effect": "allow",
                "source": "product-default",
                "scope": {"kind": "global"},
            },
        ),
        (
            "post",
            "/policy/rules",
            {
                "user": w.ref,
                "capability": "tone.playful",
                "effect": "allow",
                "source": "explicit-user",
                "scope": {"kind": "global"},
                "x": 1,
            },
        ),
        ("post", f"/policy/rules/{w.rules[0]}/revoke", {"why": "x"}),
        (
            "post",
            "/policy/answers",
            {"decision_id": allow["decision_id"], "answer": "allow", "remember": "always"},
        ),
        ("post", "/policy/answers", {"decision_id": ask, "answer": "allow", "remember": "scene"}),
        (
            "post",
            "/media-jobs",
            {
                "context": ctx,
                "capability": "tone.playful",
                "requested_by": "user",
                "idempotency_key": "k",
            },
        ),
        ("post", f"/media-jobs/{job}/start", {"x": 1}),
        ("post", f"/media-jobs/{job}/complete", {"x": 1}),
        ("post", f"/users/{w.ref}/import", bad_snapshot),
        ("post", f"/users/{w.ref}/import", {**snapshot, "extra": 1}),
    ]


def test_it_stores_nothing_for_a_refused_request(api, monkeypatch):
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})
    w = build(api)
    for method, path, body in refusals(w):
        before = row_counts()
        response = getattr(api, method)("/api/v1" + path, body, format="json")
        assert response.status_code == 400, (
            method,
            path,
            response.status_code,
            response.content[:300],
        )
        assert response.json()["errors"], path
        after = row_counts()
        assert after == before, (
            method,
            path,
            {t: (before[t], after[t]) for t in before if before[t] != after[t]},
        )


def test_it_creates_a_turn_on_the_retry_of_one_refused_for_its_plan(api, monkeypatch):
    """C2: an unknown capability in `plan` creates no turn and no memory; the retry with the
    same `turn_key` and a good plan creates it (201)."""
    w = build(api)
    conv = w.conversations[0]
    body = {
        "turn_key": "retry",
        "content": "My cat's name is Miso.",
        "plan": {"budget": 500, "capabilities": ["no.such"]},
    }
    before = row_counts()
    refused = api.post(f"/api/v1/conversations/{conv}/turns", body, format="json")
    assert refused.status_code == 400
    assert "plan.capabilities" in refused.json()["errors"]
    assert row_counts() == before
    body["plan"]["capabilities"] = ["tone.playful"]
    created = api.post(f"/api/v1/conversations/{conv}/turns", body, format="json")
    assert created.status_code == 201, created.content[:300]
    assert created.json()["extracted"][0]["memory"]["value"] == "Miso"
    assert created.json()["plan"]["turn"] == created.json()["id"]
