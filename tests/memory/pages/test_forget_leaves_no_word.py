"""F5's proof, extended by F7: a forget made through the page leaves no word behind. After
"Forget" on a memory's page, no later plan — its history, its current message, its memories —,
no `prompt` of `/memory/resolve`, no `/memory/ask` answer and no runtime read (`GET /memories`,
`GET /conversations/{id}/messages`, `GET /turns/{id}`) holds the forgotten word, whether it
stood in another memory's key and label (`people.priya.works_at`, "Priya: works at", F7.2), in
another memory's value (F7.2), in the turn's own message (F7.1, F7.5) or in a hyphenated or
soft-hyphenated spelling (F7.4)."""

import json

import pytest

from tests.helpers import live

pytestmark = pytest.mark.django_db

SOFT_HYPHEN = "\u00ad"


def spoken(document) -> str:
    """What a model would read of an answer: its JSON, soft hyphens gone, case folded."""
    return json.dumps(document, ensure_ascii=False).replace(SOFT_HYPHEN, "").casefold()


def forget_through_the_page(page, record) -> None:
    r = page.post(f"/memories/{record.pk}/forget", {"next": "/memories/"}, follow=True)
    assert r.status_code == 200, r.content


def plan_of(api, conv, key: str, content: str) -> dict:
    turn = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, "plan": {"budget": 4000}},
        format="json",
    )
    assert turn.status_code == 201, turn.content
    return turn.json()["plan"]


def runtime_reads(api, conv, turns) -> list:
    """Every read a runtime rebuilding its context could make after the forget."""
    reads = [
        api.get("/api/v1/memories", {"user": "sam"}),
        api.get(f"/api/v1/conversations/{conv.pk}/messages"),
        *(api.get(f"/api/v1/turns/{t.pk}") for t in turns),
    ]
    assert [r.status_code for r in reads] == [200] * len(reads)
    return [r.json() for r in reads]


def test_it_leaves_a_forgotten_name_in_no_key_label_value_or_message(
    page, api, say, sam, conv, ctx
):
    """F7.1, F7.2, F7.5 on the SPEC's example: forgetting the sister's name "Priya" withholds
    `people.priya.works_at` (label "Priya: works at", by its key and label) and "visiting Priya
    on Sundays" (by its value), not "green tea"; the waiting turn that mentions her answers 409
    `message_withheld` for its plan; no read holds "Priya" or her employer any more."""
    spoken_turns = [
        say("My sister is called Priya."),
        say("Priya works at Globex."),
        say("I like visiting Priya on Sundays."),
        say("I like green tea."),
    ]
    waiting = say("Where does Priya work these days?")
    works_at = live("people.priya.works_at", sam)
    assert "priya" in spoken(plan_of(api, conv, "before", "Tell me about my family."))

    forget_through_the_page(page, live("sister.name", sam))

    plan = plan_of(api, conv, "after", "Tell me about my family.")
    assert [m["value"] for m in plan["memories"]] == ["green tea"]
    assert {"kind": "memory", "id": str(works_at.pk), "reason": "withheld"} in plan["excluded"]
    assert "priya" not in spoken(plan) and "globex" not in spoken(plan)

    waiting_plan = api.get(f"/api/v1/turns/{waiting.pk}/prompt-plan", {"budget": 4000})
    assert waiting_plan.status_code == 409
    assert waiting_plan.json()["code"] == "message_withheld"
    assert "priya" not in spoken(waiting_plan.json())

    resolved = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()
    assert [m["value"] for m in resolved["prompt"]] == ["green tea"]
    assert "priya" not in spoken(resolved) and "globex" not in spoken(resolved)

    asked = api.get("/api/v1/memory/ask", {"user": "sam", "q": "Where does Priya work?"})
    assert asked.status_code == 200 and asked.json()["answer"] is None
    assert "globex" not in spoken(asked.json())

    for read in runtime_reads(api, conv, [*spoken_turns, waiting]):
        assert "priya" not in spoken(read) and "globex" not in spoken(read)


def test_it_leaves_a_forgotten_name_in_no_other_spelling(page, api, say, sam, conv, ctx):
    """F7.4: forgetting "Sir Biscuit" withholds "Sir-Biscuit" in a message and in another
    memory's value, and "Sir Bis\u00adcuit" with a soft hyphen inside the word; none of them
    reaches a plan, resolve's prompt or a runtime read."""
    said = [
        say("My cat is called Sir Biscuit."),
        say("Sir-Biscuit wants a walk."),
        say("I love Sir-Biscuit."),
        say(f"Sir Bis{SOFT_HYPHEN}cuit naps in the sun."),
        say("I like green tea."),
    ]
    assert "sir-biscuit" in spoken(plan_of(api, conv, "before", "What should we do today?"))

    forget_through_the_page(page, live("cat.name", sam))

    plan = plan_of(api, conv, "after", "What should we do today?")
    assert [m["value"] for m in plan["memories"]] == ["green tea"]
    assert "biscuit" not in spoken(plan)
    resolved = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()
    assert "biscuit" not in spoken(resolved["prompt"])
    for read in runtime_reads(api, conv, said):
        assert "biscuit" not in spoken(read)
