"""`POST /memory/remember` and `POST /memory/ask` (SPEC §8, §10): what is remembered is
answered, and what is not a question it understands answers `understood: false`."""

import pytest

from tests.memory.api.calls import forget, priya

pytestmark = pytest.mark.django_db


def test_it_remembers_and_answers_questions(api, sam, ctx):
    """§8: remember extracts and asserts; ask answers from active memories."""
    r = api.post(
        "/api/v1/memory/remember", {"context": ctx, "text": "Priya works at Acme."}, format="json"
    )
    assert r.status_code == 200
    extracted = r.json()["extracted"]
    assert [(e["outcome"], e["memory"]["key"], e["memory"]["value"]) for e in extracted] == [
        ("created", "people.priya.works_at", "Acme")
    ]
    assert extracted[0]["memory"]["authority"] == "rule-extracted"
    answer = api.get("/api/v1/memory/ask", {"user": "sam", "q": "Where does Priya work?"}).json()
    assert answer["answer"] == "Acme" and answer["memory"]["id"] == extracted[0]["memory"]["id"]
    assert answer["understood"] is True
    # C5: understood but nothing remembered answers null and says it understood.
    nothing = api.get("/api/v1/memory/ask", {"user": "sam", "q": "Where do I live?"}).json()
    assert nothing == {"answer": None, "understood": True, "memory": None}


@pytest.mark.parametrize("q", ["basil", "people.priya.works_at", "Priya?", "Tell me everything."])
def test_it_answers_understood_false_to_an_ask_it_does_not_understand_c5(api, sam, q):
    """C5: `q` is a question in words; anything else answers `answer: null, understood: false`,
    never a silent null."""
    response = api.get("/api/v1/memory/ask", {"user": "sam", "q": q})
    assert response.status_code == 200
    assert response.json() == {"answer": None, "understood": False, "memory": None}


def test_it_does_not_answer_from_a_withheld_memory_f7_2(api, sam):
    """F7.2: after forgetting the sister's name "Priya", "Where does Priya work?" is
    understood but answers nothing: `people.priya.works_at` is withheld."""
    ids = priya(api)
    asked = {"user": "sam", "q": "Where does Priya work?"}
    assert api.get("/api/v1/memory/ask", asked).json()["answer"] == "Globex"
    forget(api, ids["sister"])
    r = api.get("/api/v1/memory/ask", asked)
    assert r.json() == {"answer": None, "understood": True, "memory": None}
    assert "Globex" not in r.content.decode()
