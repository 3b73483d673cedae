"""SPEC §10 C3: the schema documents, for every operation, each problem status it can answer
with the problem shape and its extension fields, and 500 `server_error` once for all; every
`type` URI (`/problems/<code>`) is an HTML page that explains its code, with no token, drawn
from the one list of codes the API raises from."""

import re
from pathlib import Path

import pytest

from config import problems
from config.api import _DRF_CODES
from config.errors import DomainError

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
# Support's reveals (SPEC S1) are opened in the admin, never through the API: their errors
# become messages on the admin's pages.
ADMIN_ONLY = {"support.reveals"}
# These make (or, for an import, recreate) the user or character their path names: no 404.
CREATED_AT_PATH = {"user_put", "character_put", "user_import"}
EXTENSIONS = {"errors", "request_id", "retry_after", "turn", "needed_tokens", "available_tokens"}


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def raised_codes() -> set[str]:
    """Every code the code base can put in a problem: the domain errors', DRF's mapping and
    each literal `json_problem_response(status, "code", …)` in the source."""
    import config.urls  # noqa: F401  (imports every app's API, so every error class exists)

    codes = {cls.code for cls in _subclasses(DomainError) if cls.__module__ not in ADMIN_ONLY}
    codes |= {c for c, _ in _DRF_CODES.values()}
    pattern = re.compile(r"json_problem_response\(\s*\d+,\s*\"(\w+)\"")
    for app in ("config", "conversations", "memory", "policy", "support", "turns"):
        for path in (ROOT / app).rglob("*.py"):
            codes |= set(pattern.findall(path.read_text()))
    return codes


def test_it_lists_every_code_the_api_raises():
    missing = raised_codes() - set(problems.PROBLEM_CODES)
    assert not missing
    assert {
        "validation_error",
        "unauthenticated",
        "permission_denied",
        "not_found",
        "conflict",
        "idempotency_key_reused",
        "authority_conflict",
        "import_conflict",
        "payload_too_large",
        "budget_exceeded",
        "throttled",
        "unavailable",
        "server_error",
    } <= set(problems.PROBLEM_CODES)
    for cls in _subclasses(DomainError):
        if cls.__module__ not in ADMIN_ONLY:
            assert problems.PROBLEM_CODES[cls.code].status == cls.status, cls


@pytest.mark.parametrize("code", list(problems.PROBLEM_CODES))
def test_it_serves_every_problem_type_as_a_page_without_a_token(client, code):
    response = client.get(problems.type_uri(code))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    entry = problems.PROBLEM_CODES[code]
    assert code in html and entry.title in html and str(entry.status) in html
    assert "pages.css" in html  # styled like the site


def test_it_links_every_problem_page_from_the_list(client):
    html = client.get("/problems/").content.decode()
    for code in problems.PROBLEM_CODES:
        assert f'href="/problems/{code}"' in html


def readme_codes() -> dict[str, int]:
    """The README's list of problem codes (its API section), each with the status it gives:
    a run of codes shares the status in the parentheses after it."""
    text = (ROOT / "README.md").read_text()
    start = text.index("Every error is an RFC 9457 problem")
    paragraph = text[start : text.index("\n\n", start)]
    listed = paragraph[paragraph.index("`code`:") : paragraph.index("; the")]
    found = {}
    for run, status in re.findall(r"((?:`\w+`,?\s*)+)\((\d{3})", listed):
        for code in re.findall(r"`(\w+)`", run):
            found[code] = int(status)
    return found


def test_it_lists_in_the_readme_every_code_the_problem_pages_serve_and_no_other(client):
    """C3: the README's list of codes is the registry's — the codes `/problems/` links, each
    with its status — so a code added to one and not the other fails here."""
    html = client.get("/problems/").content.decode()
    served = set(re.findall(r'href="/problems/(\w+)"', html))
    assert served == set(problems.PROBLEM_CODES)
    assert readme_codes() == {code: p.status for code, p in problems.PROBLEM_CODES.items()}


def test_it_answers_the_404_page_for_an_unknown_problem_code(client):
    response = client.get("/problems/no_such_code")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_it_documents_every_operations_problems_with_the_problem_shape(client):
    schema = client.get("/api/schema/?format=json").json()
    problem = schema["components"]["schemas"]["Problem"]
    assert EXTENSIONS <= set(problem["properties"])
    assert {"type", "title", "status", "detail", "code"} <= set(problem["required"])
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            wanted = {"401", "429", "500"}
            if "requestBody" in operation:
                wanted |= {"400", "415"}
            if "{" in path and operation["operationId"] not in CREATED_AT_PATH:
                wanted.add("404")
            assert wanted <= set(responses), (method, path, wanted - set(responses))
            for status, answer in responses.items():
                if int(status) < 400:
                    continue
                content = answer["content"]
                assert list(content) == ["application/problem+json"], (path, status)
                assert content["application/problem+json"]["schema"] == {
                    "$ref": "#/components/schemas/Problem"
                }
                assert content["application/problem+json"].get("examples"), (path, status)


def test_it_carries_only_documented_fields_in_a_real_422(api, client):
    """The budget problem of a turn creation carries `turn`, `needed_tokens` and
    `available_tokens`, all in the schema's problem shape."""
    schema = client.get("/api/schema/?format=json").json()
    documented = set(schema["components"]["schemas"]["Problem"]["properties"])
    api.put("/api/v1/users/budget", {}, format="json")
    api.put("/api/v1/characters/rowan", {"name": "Rowan"}, format="json")
    conv = api.post(
        "/api/v1/conversations", {"user": "budget", "character": "rowan"}, format="json"
    ).json()["id"]
    response = api.post(
        f"/api/v1/conversations/{conv}/turns",
        {"turn_key": "k", "content": "word " * 200, "plan": {"budget": 5}},
        format="json",
    )
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "budget_exceeded" and body["type"] == "/problems/budget_exceeded"
    assert {"turn", "needed_tokens", "available_tokens"} <= set(body)
    assert set(body) <= documented
