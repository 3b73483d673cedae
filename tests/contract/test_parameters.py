"""SPEC C7: every path and query parameter is checked against its schema before any query. A
NUL, 10,000 characters or a lone surrogate (percent-encoded, as a client would send it) in any
path parameter of the OpenAPI document names nothing: a 404 problem — or, in a PUT to the URL
the parameter ends (which would create what it names), a 400 `validation_error` naming it;
never a 500. Every query parameter with a NUL or 10,000 characters is a 400 naming it. Runs on
SQLite and on PostgreSQL (DATABASE_URL), where a NUL in a query is a DataError."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.contract.test_json_types import SCHEMA
from tests.contract.test_schema_conformance import every_call
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

# Each bad value as it goes into the URL (already percent-encoded where it must be).
BAD_PATH_VALUES = {
    "nul": "%00",
    "nul inside": "a%00b",
    "10,000 characters": "x" * 10_000,
    "lone surrogate": "%ED%A0%80",
    "lone surrogate inside": "a%ED%B0%80b",
}


def operations():
    for path, item in SCHEMA["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "operationId" in operation:
                yield path, method, operation


def path_parameters():
    out = []
    for path, method, operation in operations():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                out.append((operation["operationId"], method, path, parameter["name"]))
    return out


PATH_PARAMETERS = path_parameters()


def test_it_walks_every_path_parameter_of_the_schema():
    """C7: the walk below reaches the refs, slugs and ids of every operation's path."""
    names = {name for *_rest, name in PATH_PARAMETERS}
    assert {"user_ref", "slug", "conversation_id", "turn_id", "memory_id"} <= names
    assert len(PATH_PARAMETERS) >= 25


@pytest.fixture
def working(api, monkeypatch):
    """The conformance table's request that works for each operation (a user holding every
    kind of row): the other parameters of a path are real, so only the bad one is wrong."""
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})
    w, table = every_call(api)
    rows = {}
    for name, path_parameters, _query, body, _status in table:
        if body == "snapshot":
            body = api.get(f"/api/v1/users/{w.ref}/export").json()
        rows.setdefault(name, (path_parameters, body))
    return rows


def test_it_answers_a_malformed_path_parameter_with_404_or_a_put_with_400(api, working):
    """C7: each path parameter of each operation, with each bad value: 404 `not_found`; 400
    `validation_error` naming the parameter for a PUT to the URL it ends. Nothing changes."""
    import json

    wrong = []
    for operation_id, method, path, name in PATH_PARAMETERS:
        parameters, body = working[operation_id]
        for label, bad in BAD_PATH_VALUES.items():
            url = path
            for other, value in parameters.items():
                url = url.replace("{" + other + "}", bad if other == name else quote(value))
            kwargs = {}
            if body is not None:
                kwargs = {"data": json.dumps(body), "content_type": "application/json"}
            r = getattr(api, method)(url, **kwargs)
            creates = method == "put" and path.endswith("{" + name + "}")
            status, code = (400, "validation_error") if creates else (404, "not_found")
            problem = r.json() if r["Content-Type"] == "application/problem+json" else {}
            if r.status_code != status or problem.get("code") != code:
                wrong.append((operation_id, name, label, r.status_code))
            elif creates and list(problem["errors"]) != [name]:
                wrong.append((operation_id, name, label, problem["errors"]))
    assert not wrong, wrong


def test_it_answers_the_known_500s_of_a_character_path_with_404(api, db):
    """C7: `GET /characters/%00` and `/characters/a%00b` were a DataError on PostgreSQL."""
    for url in ("/api/v1/characters/%00", "/api/v1/characters/a%00b"):
        assert_problem(api.get(url), 404, "not_found")
    assert_problem(
        api.put("/api/v1/characters/a%00b", {"name": "A"}, format="json"),
        400,
        "validation_error",
        "slug",
    )


def query_parameters():
    out = []
    for path, method, operation in operations():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                out.append((operation["operationId"], method, path, parameter["name"]))
    return out


QUERY_PARAMETERS = query_parameters()
BAD_QUERY_VALUES = {"nul": "a%00b", "10,000 characters": "x" * 10_000}


def test_it_answers_a_nul_or_an_over_long_query_parameter_with_400_naming_it(api, working):
    """C7: each query parameter of each operation, alone beside the working request's own
    path, with a NUL or 10,000 characters: 400 `validation_error` naming it."""
    assert len(QUERY_PARAMETERS) >= 20
    wrong = []
    for operation_id, method, path, name in QUERY_PARAMETERS:
        parameters, _body = working[operation_id]
        url = path
        for other, value in parameters.items():
            url = url.replace("{" + other + "}", quote(value))
        for label, bad in BAD_QUERY_VALUES.items():
            r = getattr(api, method)(f"{url}?{name}={bad}")
            problem = r.json() if r["Content-Type"] == "application/problem+json" else {}
            if r.status_code != 400 or problem.get("code") != "validation_error":
                wrong.append((operation_id, name, label, r.status_code))
            elif name not in problem.get("errors", {}):
                wrong.append((operation_id, name, label, problem.get("errors")))
    assert not wrong, wrong
