"""SPEC §7 I9 through the API: a plan is bounded by what it holds. `GET /turns/{id}/prompt-plan`
and a turn created with `plan` (I7) list at most 20 entries per kind and reason in
`excluded` — messages newest first, memories in the fill order for `budget` and by id for
any other reason — and count every one in `excluded_counts`, sorted by kind then reason."""

import pytest

from config.clock import db_now
from conversations.models import Message, Turn
from memory.models import MemoryRecord, MemorySource
from tests.factories import user_facts
from tests.turns.api.calls import plan, turn

pytestmark = pytest.mark.django_db


def long_conversation(sam, conv, n):
    """`n` earlier messages, each too long for the budgets below."""
    now = db_now()
    rows = Message.objects.bulk_create(
        [
            Message(
                user=sam,
                conversation=conv,
                seq=i + 1,
                role="user" if i % 2 == 0 else "assistant",
                content="x" * 2000,
                created_at=now,
            )
            for i in range(n)
        ]
    )
    conv.last_seq = n
    conv.save()
    return rows


def test_it_lists_the_newest_20_of_45_messages_left_out_and_counts_45(api, sam, conv):
    """I9: 45 earlier messages do not fit; the plan lists the newest 20, newest first, and
    counts 45."""
    earlier = long_conversation(sam, conv, 45)
    t = turn(api, conv, "t1", "hi").json()
    body = plan(api, t["id"], budget=100, memory_share=0).json()
    assert body["history"] == []
    assert body["excluded"] == [
        {"kind": "message", "id": str(m.pk), "reason": "budget"} for m in earlier[::-1][:20]
    ]
    assert body["excluded_counts"] == [{"kind": "message", "reason": "budget", "count": 45}]
    stored = Turn.objects.get(pk=t["id"]).plan_snapshot
    assert stored["excluded"] == [[e["kind"], e["id"], e["reason"]] for e in body["excluded"]]
    assert stored["excluded_counts"] == [["message", "budget", 45]]


def test_it_answers_a_turn_created_with_a_plan_as_the_get_does(api, sam, conv):
    """I9 with I7: a turn created with `plan` answers the bound and the counts the GET gives
    at that moment: the earlier turn's short message in the history, the 45 long ones left
    out, 20 of them listed."""
    long_conversation(sam, conv, 45)
    first = turn(api, conv, "t1", "hi").json()
    params = {"budget": 100, "memory_share": 0}
    created = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": "t2", "content": "and again", "plan": params},
        format="json",
    ).json()
    got = plan(api, created["id"], **params).json()
    assert created["plan"] == got
    assert [m["id"] for m in got["history"]] == [first["user_message"]["id"]]
    assert got["excluded_counts"] == [{"kind": "message", "reason": "budget", "count": 45}]
    assert [e["reason"] for e in got["excluded"]] == ["budget"] * 20


def test_it_lists_20_memories_of_each_reason_in_its_order_and_counts_them_all(api, sam, conv, ctx):
    """I9: of 40 supported memories, likely and uncertain, only a few fit: the plan lists the
    first 20 of the rest in the fill order (I3, as `/memory/resolve`'s prompt orders them) and
    counts them all; of 25 memories no message backs (P1), it lists the 20 first by id and
    counts 25."""
    source = Message.objects.create(
        user=sam, conversation=conv, seq=1, role="user", content="facts", created_at=db_now()
    )
    conv.last_seq = 1
    conv.save()
    rows = user_facts(sam, 65, value=lambda i: f"fact number {i}")
    supported, unsupported = rows[:40], rows[40:]
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=source) for r in supported])
    # Every other one uncertain, so the fill order (likely first, I3) is not the id order.
    MemoryRecord.objects.filter(pk__in=[r.pk for r in supported[::2]]).update(confidence=0.6)
    id_of = {r.key: str(r.pk) for r in supported}
    t = turn(api, conv, "t1", "hi").json()
    body = plan(api, t["id"], budget=300, memory_share=0.1).json()

    fill = [
        p["key"]
        for p in api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()[
            "prompt"
        ]
    ]
    given = [m["key"] for m in body["memories"]]
    assert 0 < len(given) < 20
    over = [id_of[key] for key in fill if key not in given]
    assert over[:20] != sorted(over)[:20]
    unbacked = sorted(str(r.pk) for r in unsupported)
    assert [e for e in body["excluded"] if e["kind"] == "memory"] == [
        *({"kind": "memory", "id": i, "reason": "budget"} for i in over[:20]),
        *({"kind": "memory", "id": i, "reason": "unsupported"} for i in unbacked[:20]),
    ]
    assert body["excluded_counts"] == [
        {"kind": "memory", "reason": "budget", "count": 40 - len(given)},
        {"kind": "memory", "reason": "unsupported", "count": 25},
    ]


def test_it_counts_every_memory_left_out_with_memory_use_off(api, sam, conv):
    """I9 with I8: with the `use` switch off every one of 30 memories is left out as
    `memory-off`: 20 listed by id, 30 counted."""
    source = Message.objects.create(
        user=sam, conversation=conv, seq=1, role="user", content="facts", created_at=db_now()
    )
    conv.last_seq = 1
    conv.save()
    rows = user_facts(sam, 30)
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=source) for r in rows])
    r = api.put("/api/v1/users/sam/memory-settings", {"use": False}, format="json")
    assert r.status_code == 200, r.json()
    t = turn(api, conv, "t1", "hi").json()
    body = plan(api, t["id"], budget=2000).json()
    assert body["memories"] == []
    assert body["excluded"] == [
        {"kind": "memory", "id": i, "reason": "memory-off"}
        for i in sorted(str(r.pk) for r in rows)[:20]
    ]
    assert body["excluded_counts"] == [{"kind": "memory", "reason": "memory-off", "count": 30}]


def test_it_documents_the_bound_and_the_counts_in_the_schema(client):
    """I9, §10 C6: the served schema documents `excluded_counts` (kind, reason, count) beside
    `excluded`, and says in words that `excluded` lists at most 20 per kind and reason."""
    schema = client.get("/api/schema/?format=json").json()
    shapes = schema["components"]["schemas"]
    plan_shape = shapes["PromptPlanOutput"]
    assert "excluded_counts" in plan_shape["required"]
    counts = plan_shape["properties"]["excluded_counts"]
    assert counts["type"] == "array"
    item = shapes[counts["items"]["$ref"].rsplit("/", 1)[-1]]
    assert sorted(item["properties"]) == ["count", "kind", "reason"]
    assert item["properties"]["count"]["type"] == "integer"
    assert "at most 20" in plan_shape["properties"]["excluded"]["description"]
    assert "whole total" in counts["description"]
    operation = schema["paths"]["/api/v1/turns/{turn_id}/prompt-plan"]["get"]
    assert "at most 20" in operation["description"]
