"""F7.2 through the MCP tools (SPEC §15 M3): a memory a forget withholds is never answered by
`recall` or `ask`, and `list_memories` leaves it out unless asked, then masked as
`GET /memories` masks it."""

import pytest

from tests.memory.api.calls import forget, priya

pytestmark = pytest.mark.django_db

WHERE = {"question": "Where does Priya work?"}


def _words(body) -> str:
    return str(body).lower()


def test_it_answers_no_withheld_memory_through_recall_ask_or_list(api, sam, connect):
    """F7.2, M3: after the user forgets the sister's name "Priya", neither `recall`, `ask` nor
    `list_memories` holds "Priya" or "Globex" (`people.priya.works_at` and "visiting Priya on
    Sundays" are withheld); "green tea" is still recalled."""
    ids = priya(api)
    call = connect(sam)
    assert "globex" in _words(call("recall", {})[0])
    assert call("ask", WHERE)[0]["answer"] == "Globex"
    forget(api, ids["sister"])
    recalled, asked, listed = call("recall", {}), call("ask", WHERE), call("list_memories", {})
    assert not any(is_error for _, is_error in (recalled, asked, listed))
    for body, _ in (recalled, asked, listed):
        assert "priya" not in _words(body) and "globex" not in _words(body), body
    assert [m["value"] for m in recalled[0]["memories"]] == ["green tea"]
    assert asked[0] == {"answer": None, "understood": True, "memory": None}
    assert {m["id"] for m in listed[0]["memories"]} == {ids["sister"], ids["tea"]}


def test_it_lists_withheld_memories_masked_only_when_asked(api, sam, connect):
    """F7.2: `list_memories(include_withheld=true)` lists the withheld memories as
    `GET /memories?include_withheld=true` does: value null, the key's free part masked."""
    ids = priya(api)
    forget(api, ids["sister"])
    body, is_error = connect(sam)("list_memories", {"include_withheld": True})
    assert not is_error
    shown = {m["id"]: (m["key"], m["value"]) for m in body["memories"]}
    assert shown[ids["works"]] == ("people.*.works_at", None)
    assert shown[ids["visits"]] == ("user.routine", None)
    assert body["count"] == 4 and "priya" not in _words(body) and "globex" not in _words(body)
    listed = api.get("/api/v1/memories", {"user": "sam", "include_withheld": "true"}).json()
    assert body["memories"] == listed["results"]


def test_it_refuses_an_include_withheld_that_is_not_a_boolean(sam, connect):
    """C7: `include_withheld` is a JSON boolean; a string is refused by name."""
    body, is_error = connect(sam)("list_memories", {"include_withheld": "true"})
    assert is_error and body["code"] == "validation_error"
    assert "include_withheld" in body["detail"]
