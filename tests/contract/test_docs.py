"""SPEC §10: the browsable docs (`/api/docs/`, Swagger UI on the served schema) show the
problem shapes and an example of each operation: every operation that takes a body carries an
example request that its own schema allows (the positive-mode test sends each to the server),
and every problem answer carries an example per code."""

from pathlib import Path

import jsonschema
import pytest

from config.guides import section_lines

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(client):
    return client.get("/api/schema/?format=json").json()


def _validator(schema: dict, part: dict):
    return jsonschema.Draft202012Validator({**part, "components": schema["components"]})


def test_it_gives_every_request_body_an_example_its_schema_allows(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            examples = body.get("examples")
            assert examples, (method, path)
            validator = _validator(schema, body["schema"])
            for example in examples.values():
                errors = [e.message for e in validator.iter_errors(example["value"])]
                assert not errors, (method, path, errors)


def test_it_gives_problem_examples_that_match_the_problem_shape(schema):
    validator = _validator(schema, {"$ref": "#/components/schemas/Problem"})
    for item in schema["paths"].values():
        for operation in item.values():
            for status, answer in operation["responses"].items():
                if int(status) < 400:
                    continue
                examples = answer["content"]["application/problem+json"]["examples"]
                for example in examples.values():
                    assert example["value"]["status"] == int(status)
                    assert not list(validator.iter_errors(example["value"]))


def test_it_refuses_an_unknown_field_as_the_schema_says(api, schema):
    """C1: `additionalProperties: false`, and the 400 names the field."""
    assert schema["components"]["schemas"]["UserPutInputRequest"]["additionalProperties"] is False
    response = api.put("/api/v1/users/sam", {"nickname": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"nickname": ["Unknown field."]}


def test_it_loads_the_schema_on_the_docs_page(client):
    html = client.get("/api/docs/").content.decode()
    assert "swagger" in html.lower()


def test_it_links_the_api_docs_to_the_readmes_guide_to_connect_an_assistant(schema, client):
    """M2, M3: the API's description links to "Connect an assistant", which serves the
    README's section of that name to anyone (no sign-in), and that section only."""
    assert "[Connect an assistant](/docs/connect-an-assistant)" in schema["info"]["description"]
    section = section_lines(README.read_text(), "Connect an assistant")
    assert section[1].startswith("A person can let an assistant they use elsewhere")
    r = client.get("/docs/connect-an-assistant")
    assert r.status_code == 200
    html = r.content.decode()
    assert "<h1>Connect an assistant</h1>" in html
    assert "<strong>Streamable HTTP.</strong>" in html
    assert "&quot;mcpServers&quot;" in html and "COMPANION_MEMORY_TOKEN" in html
    assert "The pages (end users)" not in html
