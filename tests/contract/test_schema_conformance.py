"""SPEC §10: the OpenAPI schema matches every response. Generated requests (test_fuzz.py)
mostly end in 4xx; here every operation is also called with a request that succeeds, on a
user holding every kind of row, and schemathesis checks the answer against the schema: status
code, content type and body (response_schema_conformance), lists as the paginated object."""

import pytest
import schemathesis

from config.wsgi import application
from tests.contract.test_fuzz import CHECKS
from tests.turns.api.snapshot_world import build_every_kind

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)

pytestmark = pytest.mark.django_db


def calls(w, state):
    """operation id → (path parameters, query, body, expected status) of a request that works."""
    from conversations.models import Turn
    from memory.models import MemoryRecord, Tombstone
    from policy.models import MediaJob

    ref = w.ref
    conv = w.conversations[0]
    # The newest open turn: made after every forget of the world, so no forget withholds its
    # message and its plan answers 200 (F7.1). (The first by id was any open turn, some of which
    # a forget of the world withholds.)
    turn = str(
        Turn.objects.filter(user__username=ref, status="open").order_by("-created_at").first().pk
    )
    pet = (
        MemoryRecord.objects.filter(user__username=ref, key="pet.name").order_by("-version").first()
    )
    tombstone = str(Tombstone.objects.filter(user__username=ref).first().pk)
    job = w.job(0, "media.voice")
    w.decide(2, 1)
    ask = w.decisions[-1]
    assert ask["effect"] == "ask"
    done = MediaJob.objects.filter(user__username=ref, status="running").first()
    return [
        ("user_put", {"user_ref": "newcomer"}, {}, {}, 201),
        ("user_get", {"user_ref": ref}, {}, None, 200),
        ("character_put", {"slug": "wren"}, {}, {"name": "Wren"}, 201),
        ("character_list", {}, {"limit": 5}, None, 200),
        ("character_get", {"slug": "rowan"}, {}, None, 200),
        ("conversation_create", {}, {}, {"user": ref, "character": "rowan"}, 201),
        ("conversation_list", {}, {"user": ref, "character": "rowan"}, None, 200),
        ("conversation_get", {"conversation_id": conv}, {}, None, 200),
        (
            "turn_create",
            {"conversation_id": conv},
            {},
            {"turn_key": "conform", "content": "I like tea."},
            201,
        ),
        (
            "turn_create",
            {"conversation_id": conv},
            {},
            {
                "turn_key": "conform-plan",
                "content": "My cat's name is Miso.",
                "plan": {
                    "budget": 500,
                    "capabilities": ["tone.playful"],
                    "memory_order": "relevance",
                },
            },
            201,
        ),
        (
            "turn_prompt_plan",
            {"turn_id": turn},
            {"budget": 500, "capabilities": "tone.playful"},
            None,
            200,
        ),
        ("memory_settings_get", {"user_ref": ref}, {}, None, 200),
        ("memory_settings_put", {"user_ref": ref}, {}, {"learn": True, "use": True}, 200),
        ("turn_reply", {"turn_id": turn}, {}, {"content": "Tea it is."}, 201),
        ("turn_get", {"turn_id": turn}, {}, None, 200),
        (
            "conversation_messages",
            {"conversation_id": conv},
            {"after_seq": 0, "limit": 20},
            None,
            200,
        ),
        (
            "memory_assert",
            {},
            {},
            {"user": ref, "key": "story.mood", "value": "calm", "scope": {"kind": "user"}},
            201,
        ),
        ("memory_list", {}, {"user": ref, "limit": 5}, None, 200),
        ("memory_get", {"memory_id": str(pet.pk)}, {}, None, 200),
        ("memory_history", {}, {"user": ref, "key": "pet.name"}, None, 200),
        ("memory_resolve", {}, {}, {"context": w.ctx(0), "explain": str(pet.pk)}, 200),
        ("memory_remember", {}, {}, {"context": w.ctx(0), "text": "I live in Oslo."}, 200),
        ("memory_ask", {}, {"user": ref, "q": "Where does Priya work?"}, None, 200),
        ("memory_confirm", {"memory_id": state["confirmable"]}, {}, {}, 201),
        ("memory_correct", {"memory_id": state["correctable"]}, {}, {"value": "Biscuit"}, 201),
        ("memory_retract", {"memory_id": state["retractable"]}, {}, {}, 200),
        (
            "memory_forget",
            {"memory_id": state["forgettable"]},
            {},
            {"everywhere": False, "whole_key": False},
            200,
        ),
        ("tombstone_list", {}, {"user": ref}, None, 200),
        ("tombstone_get", {"tombstone_id": tombstone}, {}, None, 200),
        ("tombstone_delete", {"tombstone_id": tombstone}, {}, None, 204),
        ("policy_capabilities_list", {}, {}, None, 200),
        (
            "policy_decide",
            {},
            {},
            {
                "context": w.ctx(0),
                "capability": "media.voice",
                "requested_by": "user",
                "explain": True,
            },
            200,
        ),
        ("policy_rules_list", {}, {"user": ref}, None, 200),
        (
            "policy_rules_create",
            {},
            {},
            {
                "user": ref,
                "capability": "topic.work",
                "effect": "allow",
                "source": "explicit-user",
                "scope": {"kind": "global"},
            },
            201,
        ),
        ("policy_rules_revoke", {"rule_id": w.rules[0]}, {}, {}, 200),
        (
            "policy_answers_create",
            {},
            {},
            {"decision_id": ask["decision_id"], "answer": "allow", "remember": "character"},
            200,
        ),
        (
            "media_jobs_create",
            {},
            {},
            {
                "context": w.ctx(1),
                "capability": "media.voice",
                "requested_by": "user",
                "idempotency_key": "conform",
            },
            201,
        ),
        ("media_jobs_start", {"job_id": job["id"]}, {}, {}, 200),
        ("media_jobs_complete", {"job_id": str(done.pk)}, {}, {}, 200),
        ("user_export", {"user_ref": ref}, {}, None, 200),
        ("conversation_delete", {"conversation_id": w.conversations[1]}, {}, None, 204),
        ("user_import", {"user_ref": ref}, {}, "snapshot", 200),
        ("user_delete", {"user_ref": "newcomer"}, {}, None, 204),
        ("event_feed", {}, {"user": ref, "limit": 20}, None, 200),  # SPEC V2
    ]


def keep_the_test_connection() -> None:
    """Requests go straight into the WSGI app: keep the end of each from closing the test's
    database connection (Django's test client reconnects that signal after each of its own
    requests, so this is done before every call)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)


def every_call(api):
    """A user holding every kind of row, and the table of one working request per operation
    (`calls`), checked to cover every operation of the schema."""
    w = build_every_kind(api, "conform")

    def fresh(key):
        r = api.post(
            "/api/v1/memories",
            {"user": w.ref, "key": key, "value": "fresh", "scope": {"kind": "user"}},
            format="json",
        )
        return r.json()["memory"]["id"]

    state = {
        name: fresh(f"story.{name}")
        for name in ("retractable", "forgettable", "correctable", "confirmable")
    }
    table = calls(w, state)
    operation_ids = {
        result.ok().definition.raw["operationId"] for result in schema.get_all_operations()
    }
    covered = {name for name, *_ in table}
    assert covered == operation_ids, operation_ids ^ covered
    return w, table


def case_of(schema_, api, w, row):
    """The schemathesis case of one row of `every_call`'s table (the import's body is the
    user's own export, read when the row is reached)."""
    name, path_parameters, query, body, _status = row
    if body == "snapshot":
        body = api.get(f"/api/v1/users/{w.ref}/export").json()
    kwargs = {"path_parameters": path_parameters, "query": query}
    if body is not None:
        kwargs["body"] = body
        kwargs["media_type"] = "application/json"
    return schema_.find_operation_by_id(name).Case(**kwargs)


def test_it_answers_every_operation_as_its_schema_says(api, api_token, monkeypatch):
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})
    w, table = every_call(api)
    headers = {"Authorization": f"Bearer {api_token}"}
    try:
        for row in table:
            name, *_, status = row
            case = case_of(schema, api, w, row)
            keep_the_test_connection()
            response = case.call_and_validate(headers=headers, checks=CHECKS)
            assert response.status_code == status, (name, response.status_code, response.text[:500])
    finally:
        from django.core import signals
        from django.db import close_old_connections

        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
