"""SPEC §7 I7: one round trip. `POST /conversations/{id}/turns` with `plan` answers the turn
and its plan; the plan equals what `GET /turns/{id}/prompt-plan` with the same parameters
answers at that moment (same body, same plan_hash)."""

import pytest

from conversations.models import Message, Turn
from memory.models import MemoryRecord, MemoryWithholding
from memory.storage import MEMORY_CACHE
from tests.memory.api.calls import forget, priya

pytestmark = pytest.mark.django_db


def create(api, conv, key, content, **extra):
    return api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, **extra},
        format="json",
    )


def get_plan(api, turn_id, **params):
    if isinstance(params.get("capabilities"), list):
        params["capabilities"] = ",".join(params["capabilities"])
    return api.get(f"/api/v1/turns/{turn_id}/prompt-plan", params)


def without_decision_ids(body: dict) -> dict:
    """A plan body with each policy decision's id left out: every plan logs its own decisions
    (D10), so only their id differs between two plans of the same state."""
    return {
        **body,
        "policy": [{k: v for k, v in d.items() if k != "decision_id"} for d in body["policy"]],
    }


def chat(api, conv):
    """A conversation with history and memories (two extracted, one about the basil)."""
    create(api, conv, "a", "My dog's name is Rex.")
    create(api, conv, "b", "We watered the basil on the rooftop today.")
    create(api, conv, "c", "I like green tea.")


@pytest.mark.parametrize(
    "params",
    [
        {"budget": 2000},
        {"budget": 2000, "memory_order": "relevance"},
        {"budget": 60, "memory_share": 0.5, "history": "skip", "memory_order": "certainty"},
        {
            "budget": 2000,
            "memory_order": "relevance",
            "capabilities": ["tone.playful"],
            "history": "contiguous",
        },
    ],
)
def test_it_answers_the_plan_the_get_gives_for_the_same_parameters(api, conv, params):
    """I7: same body and same plan_hash, under certainty and relevance (I6)."""
    chat(api, conv)
    r = create(api, conv, "t", "Tell me about the basil and the dog again.", plan=params)
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["plan"]["turn"] == body["id"]
    assert body["plan"]["current_message"]["id"] == body["user_message"]["id"]
    got = get_plan(api, body["id"], **params)
    assert got.status_code == 200
    assert body["plan"]["plan_hash"] == got.json()["plan_hash"]
    assert without_decision_ids(body["plan"]) == without_decision_ids(got.json())
    # The three earlier messages (at 60 tokens the two newest, which fit) and both memories.
    fits = (2, 2) if params["budget"] == 60 else (3, 2)
    assert (len(body["plan"]["history"]), len(body["plan"]["memories"])) == fits
    # The turn keeps the snapshot of the plan it answered (§7).
    assert Turn.objects.get(pk=body["id"]).plan_hash == body["plan"]["plan_hash"]


def test_it_plans_with_the_memories_extracted_from_the_message_itself(api, conv):
    """I7 at that moment: what the new message taught is already remembered for its plan."""
    r = create(api, conv, "t", "My cat's name is Miso.", plan={"budget": 500})
    [extracted] = r.json()["extracted"]
    memories = [(m["key"], m["value"]) for m in r.json()["plan"]["memories"]]
    assert memories == [(extracted["memory"]["key"], "Miso")]
    assert (
        r.json()["plan"]["plan_hash"]
        == get_plan(api, r.json()["id"], budget=500).json()["plan_hash"]
    )


def test_it_answers_no_plan_when_none_is_asked_for(api, conv):
    body = create(api, conv, "t", "hello").json()
    assert "plan" not in body and Turn.objects.get(pk=body["id"]).plan_hash in ("", None)


def test_it_answers_a_replayed_creation_with_a_plan_computed_now(api, conv):
    """I7 + I4: a retry with the same key and content answers 200, the same turn, and a plan of
    the state now (a memory learned since is in it), equal to the GET's."""
    first = create(api, conv, "t", "Where was I?", plan={"budget": 2000}).json()
    assert first["plan"]["memories"] == []
    create(api, conv, "later", "I live in Lisbon.")
    again = create(api, conv, "t", "Where was I?", plan={"budget": 2000})
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    plan = again.json()["plan"]
    assert [m["key"] for m in plan["memories"]] == ["user.lives_in"]
    assert plan["plan_hash"] != first["plan"]["plan_hash"]
    assert plan == get_plan(api, first["id"], budget=2000).json()
    # The later message is after the boundary: still no history (I1).
    assert plan["history"] == []


def test_it_answers_422_budget_exceeded_and_keeps_the_turn_created(api, conv):
    """I7: 422 budget_exceeded, the turn exists; a retry with the same key and content
    replays it (with or without a plan)."""
    r = create(api, conv, "t", "x" * 400, plan={"budget": 50})
    assert r.status_code == 422 and r.json()["code"] == "budget_exceeded"
    turn = Turn.objects.get(conversation=conv, turn_key="t")
    assert r.json()["turn"] == str(turn.pk)
    assert Message.objects.filter(conversation=conv).count() == 1
    again = create(api, conv, "t", "x" * 400)
    assert again.status_code == 200 and again.json()["id"] == str(turn.pk)
    planned = create(api, conv, "t", "x" * 400, plan={"budget": 500})
    assert planned.status_code == 200 and planned.json()["plan"]["current_message"]["id"] == str(
        turn.user_message_id
    )
    assert Message.objects.filter(conversation=conv).count() == 1


@pytest.mark.parametrize(
    ("plan", "field"),
    [
        ({}, "plan.budget"),
        ({"budget": 0}, "plan.budget"),
        ({"budget": "many"}, "plan.budget"),
        ({"budget": 500, "memory_share": 2}, "plan.memory_share"),
        ({"budget": 500, "history": "all"}, "plan.history"),
        ({"budget": 500, "memory_order": "random"}, "plan.memory_order"),
        ({"budget": 500, "capabilities": "tone.playful"}, "plan.capabilities"),
        ({"budget": 500, "capabilities": [7]}, "plan.capabilities.0"),
        ({"budget": 500, "now": "2030-01-01T00:00:00Z"}, "plan.now"),
        ({"budget": 500, "colour": "red"}, "plan.colour"),
        ("budget=500", "plan"),
    ],
)
def test_it_refuses_bad_plan_parameters_naming_the_field_and_creates_nothing(
    api, conv, plan, field
):
    r = create(api, conv, "t", "hi", plan=plan)
    assert r.status_code == 400 and field in r.json()["errors"], r.json()
    assert not Turn.objects.exists() and not Message.objects.exists()


def test_it_names_the_plan_field_of_an_unknown_capability_and_stores_nothing(api, conv):
    """C2: a turn refused for its plan (400 naming `plan.capabilities`) stores nothing — no
    turn, no message, no memory — and the retry with the same turn_key and a good plan
    creates it (201)."""
    r = create(
        api,
        conv,
        "t",
        "My dog's name is Rex.",
        plan={"budget": 500, "capabilities": ["tone.sarcastic"]},
    )
    assert r.status_code == 400 and list(r.json()["errors"]) == ["plan.capabilities"], r.json()
    assert not Turn.objects.filter(conversation=conv).exists()
    assert not Message.objects.filter(conversation=conv).exists()
    assert not MemoryRecord.objects.filter(user=conv.user).exists()
    again = create(
        api,
        conv,
        "t",
        "My dog's name is Rex.",
        plan={"budget": 500, "capabilities": ["tone.playful"]},
    )
    assert again.status_code == 201 and again.json()["plan"]["policy"][0]["effect"] == "ask"
    assert [e["memory"]["key"] for e in again.json()["extracted"]] == ["dog.name"]


def test_it_still_answers_409_to_a_conflicting_retry_with_a_plan(api, conv):
    create(api, conv, "t", "hi")
    r = create(api, conv, "t", "other", plan={"budget": 500})
    assert r.status_code == 409


def test_it_describes_the_plan_of_a_turn_creation_in_the_schema():
    """OpenAPI: the request's `plan` takes exactly the plan parameters (no `now`), the answer's
    `plan` is the GET's plan object."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    turn_create = schema["paths"]["/api/v1/conversations/{conversation_id}/turns"]["post"]
    request = turn_create["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit(
        "/", 1
    )[1]
    plan_ref = components[request]["properties"]["plan"]["allOf"][0]["$ref"].rsplit("/", 1)[1]
    assert set(components[plan_ref]["properties"]) == {
        "budget",
        "memory_share",
        "history",
        "capabilities",
        "memory_order",
    }
    assert components[plan_ref]["required"] == ["budget"]
    for status in ("200", "201"):
        answer = turn_create["responses"][status]["content"]["application/json"]["schema"][
            "$ref"
        ].rsplit("/", 1)[1]
        assert "plan" not in components[answer].get("required", [])
        answer_plan = components[answer]["properties"]["plan"]["allOf"][0]["$ref"].rsplit("/", 1)[1]
        get_answer = schema["paths"]["/api/v1/turns/{turn_id}/prompt-plan"]["get"]["responses"][
            "200"
        ]
        assert get_answer["content"]["application/json"]["schema"]["$ref"].endswith(
            "/" + answer_plan
        )
    assert "422" in turn_create["responses"]


def test_it_excludes_memories_switched_off_from_the_created_turns_plan(api, conv, sam):
    """I8 holds in the one round trip: the `use` switch comes with the user loaded by creation."""
    chat(api, conv)
    api.put(
        f"/api/v1/users/{sam.username}/memory-settings",
        {"learn": True, "use": False},
        format="json",
    )
    body = create(api, conv, "t", "What about the dog?", plan={"budget": 2000}).json()
    assert body["plan"]["memories"] == []
    assert {e["reason"] for e in body["plan"]["excluded"] if e["kind"] == "memory"} == {
        "memory-off"
    }
    assert MemoryRecord.objects.filter(user=sam).count() == 2
    assert without_decision_ids(body["plan"]) == without_decision_ids(
        get_plan(api, body["id"], budget=2000).json()
    )


def _memories(body) -> list[str]:
    return sorted(m["value"] for m in body["plan"]["memories"])


def _withheld(body) -> set[str]:
    return {
        e["id"]
        for e in body["plan"]["excluded"]
        if e["kind"] == "memory" and e["reason"] == "withheld"
    }


def test_it_withholds_in_the_next_turn_of_the_same_process_and_gives_back_on_undo_f7_2(
    api, sam, conv
):
    """F7.2 with the held state (docs/DESIGN.md, "Memory owns the turn's state"): a turn
    before the forget plans with `people.priya.works_at`; the next turn of this process,
    caught up with what the forget changed, lists it and the routine naming Priya as
    `{kind: memory, reason: withheld}`; the GET and a replay plan the same; an undo (F4)
    gives them back (the forgotten name itself stays erased, F4)."""
    ids = priya(api)
    before = create(api, conv, "t1", "How are you?", plan={"budget": 2000}).json()
    assert _memories(before) == ["Globex", "Priya", "green tea", "visiting Priya on Sundays"]
    tombstone = forget(api, ids["sister"])
    caught_up = MEMORY_CACHE.caught_up
    after = create(api, conv, "t2", "What should we do today?", plan={"budget": 2000}).json()
    assert MEMORY_CACHE.caught_up == caught_up + 1  # the held state, caught up
    assert _memories(after) == ["green tea"]
    assert _withheld(after) == {ids["works"], ids["visits"]}
    got = get_plan(api, after["id"], budget=2000).json()
    assert got["plan_hash"] == after["plan"]["plan_hash"] and _withheld({"plan": got}) == {
        ids["works"],
        ids["visits"],
    }
    replayed = create(api, conv, "t2", "What should we do today?", plan={"budget": 2000}).json()
    assert _withheld(replayed) == {ids["works"], ids["visits"]}
    assert api.delete(f"/api/v1/tombstones/{tombstone['id']}").status_code == 204
    undone = create(api, conv, "t3", "And now?", plan={"budget": 2000}).json()
    assert _memories(undone) == ["Globex", "green tea", "visiting Priya on Sundays"]
    assert not _withheld(undone)


def test_it_releases_a_memory_a_later_message_teaches_again_f7_2(api, sam, conv):
    """F7.2: a message after the forget that teaches the record again (a learnt write whose
    evidence is after `forgotten_at`) releases it — in the plan of that turn and of the next
    — while the routine it does not teach stays withheld."""
    ids = priya(api)
    create(api, conv, "t1", "How are you?", plan={"budget": 2000})
    forget(api, ids["sister"])
    taught = create(api, conv, "t2", "My friend Priya works at Globex.", plan={"budget": 2000})
    body = taught.json()
    assert [(e["outcome"], e["memory"]["id"]) for e in body["extracted"]] == [
        ("unchanged", ids["works"])
    ]
    assert _memories(body) == ["Globex", "green tea"] and _withheld(body) == {ids["visits"]}
    later = create(api, conv, "t3", "Good.", plan={"budget": 2000}).json()
    assert _memories(later) == ["Globex", "green tea"] and _withheld(later) == {ids["visits"]}
    assert not MemoryWithholding.objects.filter(memory_id=ids["works"]).exists()
