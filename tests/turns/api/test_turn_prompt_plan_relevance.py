"""The relevance order (SPEC §7, I6) through `GET /turns/{id}/prompt-plan`."""

import pytest

from memory.models import KeyDefinition, MemoryRecord
from tests.factories import MessageFactory
from tests.turns.api.calls import plan, seed_history_and_memories, turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def told(api, conv):
    """The user told the companion a few things over several turns (oldest first)."""
    turn(api, conv, "t1", "Call me Sam.")
    turn(api, conv, "t2", "I am writing a letter to my sister.")
    api.post(
        "/api/v1/memories",
        {
            "user": "sam",
            "key": "story.letter.status",
            "value": "unfinished, not sent",
            "scope": {"kind": "user"},
            "confidence": 0.7,
            "sources": [str(MessageFactory(conversation=conv).pk)],
        },
        format="json",
    )
    turn(api, conv, "t3", "The basil plant is named Marlowe.")
    turn(api, conv, "t4", "I like jazz. I live in Boston. I work at Acme.")
    # Two messages of small talk right before the question.
    small = turn(api, conv, "t-small", "Good evening.").json()
    api.post(f"/api/v1/turns/{small['id']}/reply", {"content": "Evening! Sit down."}, format="json")


def _id(key: str) -> str:
    return str(MemoryRecord.objects.get(key=key).pk)


def keys(body) -> list[str]:
    return [m["key"] for m in body["memories"]]


def test_it_keeps_the_certainty_order_by_default(api, conv, told):
    """I6: without memory_order (or with `certainty`) the plan is the I3 order and every
    plan memory carries `relevance: null`."""
    t = turn(api, conv, "t5", "Did I ever send the letter?").json()
    default = plan(api, t["id"]).json()
    explicit = plan(api, t["id"], memory_order="certainty").json()
    assert default == {**explicit, "policy": default["policy"]}
    assert default["memory_order"] == "certainty"
    assert all(m["relevance"] is None for m in default["memories"])
    # Likely facts newest first, the uncertain letter last; pinning plays no part here.
    assert keys(default)[-2:] == ["user.preferred_name", "story.letter.status"]
    assert keys(default)[0] in ("user.works_at", "user.lives_in", "user.likes")


def test_it_orders_by_relevance_with_a_score_on_every_memory(api, conv, told):
    """I6: pinned keys first (user.preferred_name is seeded pinned), then by score, then the
    I3 order; each plan memory carries its rounded score."""
    t = turn(api, conv, "t5", "Did I ever send the letter?").json()
    body = plan(api, t["id"], memory_order="relevance").json()
    assert body["memory_order"] == "relevance"
    assert keys(body)[:2] == ["user.preferred_name", "story.letter.status"]
    scores = [m["relevance"] for m in body["memories"]]
    assert scores[0] == 0.0 and scores[1] > 0
    assert scores[1:] == sorted(scores[1:], reverse=True)
    assert all(isinstance(s, float) and round(s, 6) == s for s in scores)
    letter = body["memories"][1]
    assert letter["certainty"] == "uncertain"  # relevance never changes a certainty


def test_it_fills_a_tight_budget_with_what_the_message_is_about(api, conv, told):
    """I6: with room for a few memories, the certainty order fills them with the newest
    likely facts and leaves the (uncertain) letter out; relevance admits the pinned name and
    the letter the user asks about first."""
    t = turn(api, conv, "t5", "What was the letter about again?").json()
    certainty = plan(api, t["id"], budget=110).json()
    relevance = plan(api, t["id"], budget=110, memory_order="relevance").json()
    assert "story.letter.status" not in keys(certainty)
    assert keys(relevance)[:2] == ["user.preferred_name", "story.letter.status"]
    assert {"kind": "memory", "id": _id("story.letter.status"), "reason": "budget"} in certainty[
        "excluded"
    ]
    assert relevance["plan_hash"] != certainty["plan_hash"]


def test_it_counts_the_two_messages_before_the_current_one(api, conv, told):
    """I6: the query is the current message plus the last 2 history messages (either role)."""
    t = turn(api, conv, "t5", "How is it going?").json()
    api.post(
        f"/api/v1/turns/{t['id']}/reply",
        {"content": "Marlowe, your basil plant, is thriving."},
        format="json",
    )
    t6 = turn(api, conv, "t6", "And?").json()
    before = plan(api, t["id"], memory_order="relevance").json()
    assert "basil_plant.name" not in keys(before)[:2]
    body = plan(api, t6["id"], memory_order="relevance").json()
    assert keys(body)[:2] == ["user.preferred_name", "basil_plant.name"]
    assert body["memories"][1]["relevance"] > 0


def test_it_follows_the_registry_when_a_key_is_unpinned_or_pinned(api, conv, told):
    """I6: pinning is the key registry's flag, read per plan."""
    t = turn(api, conv, "t5", "Did I ever send the letter?").json()
    KeyDefinition.objects.filter(pk="user.preferred_name").update(pinned=False)
    KeyDefinition.objects.filter(pk="user.likes").update(pinned=True)
    body = plan(api, t["id"], memory_order="relevance").json()
    assert keys(body)[:2] == ["user.likes", "story.letter.status"]
    assert "user.preferred_name" in keys(body)[2:]


def test_it_gives_the_same_hash_for_the_same_state_under_relevance(api, conv, told):
    """I6: pure and deterministic: the same state and parameters give the same plan and
    hash (not covering `now`)."""
    t = turn(api, conv, "t5", "Did I ever send the letter?").json()
    first = plan(api, t["id"], memory_order="relevance", now="2030-01-01T00:00:00Z").json()
    second = plan(api, t["id"], memory_order="relevance", now="2030-01-02T00:00:00Z").json()
    assert first["plan_hash"] == second["plan_hash"] and first["memories"] == second["memories"]


@pytest.mark.parametrize("value", ["recency", "RELEVANCE", "", "relevance,certainty"])
def test_it_refuses_an_unknown_memory_order(api, conv, value):
    t = turn(api, conv, "t1", "hi").json()
    r = plan(api, t["id"], memory_order=value)
    assert r.status_code == 400 and r.json()["code"] == "validation_error"
    assert "memory_order" in r.json()["errors"]


def test_it_describes_memory_order_and_relevance_in_the_schema(api):
    """§10: the OpenAPI schema names the parameter's values and the nullable score."""
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/turns/{turn_id}/prompt-plan"]["get"]
    [param] = [p for p in operation["parameters"] if p["name"] == "memory_order"]
    enum = param["schema"].get("enum") or _ref(schema, param["schema"])["enum"]
    assert set(enum) == {"certainty", "relevance"}
    memory = _ref(
        schema,
        _ref(
            schema,
            schema["components"]["schemas"]["PromptPlanOutput"]["properties"]["memories"]["items"],
        ),
    )
    assert memory["properties"]["relevance"]["type"] == ["number", "null"]  # OpenAPI 3.1


def _ref(schema, node):
    if "$ref" in node:
        return schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    if "allOf" in node:
        return _ref(schema, node["allOf"][0])
    return node


@pytest.mark.parametrize("order", ["certainty", "relevance"])
@pytest.mark.parametrize("n", [10, 1000])
def test_it_plans_in_a_constant_number_of_queries_in_either_order(
    api, conv, sam, n, order, django_assert_num_queries
):
    """DESIGN: the plan's query count does not grow with memories or messages, and relevance
    costs no query of its own: the two messages before the turn come with the history's read
    and the registry's pinned keys with the registry."""
    seed_history_and_memories(
        sam,
        conv,
        n,
        message_text=lambda i: f"m{i} letter",
        memory_value=lambda i: f"letter {i}" if i % 7 else f"v{i}",
    )
    t = turn(api, conv, "t1", "the letter?").json()
    plan(
        api, t["id"], budget=500, now="2030-01-01T00:00:00Z", capabilities="tone.playful"
    )  # warms the catalog
    # Token, the turn, the memory state (one statement that checks the user's memory version:
    # the warm plan above left this context's state in the process's cache), history (with the
    # text relevance reads), then the decision (savepoint, version, rules, log, release) and
    # the turn's snapshot: the relevance order reads nothing more — the pinned keys come with
    # the cached registry.
    with django_assert_num_queries(10):
        r = plan(
            api,
            t["id"],
            budget=500,
            now="2030-01-01T00:00:00Z",
            capabilities="tone.playful",
            memory_order=order,
        )
    assert r.status_code == 200
    assert r.json()["memory_order"] == order and r.json()["memories"]
