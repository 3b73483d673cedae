"""`POST /memory/remember` and `POST /memory/ask` (SPEC §8, §10): what is remembered is
answered, and what is not a question it understands answers `understood: false`."""

import pytest

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
