"""SPEC §10 "never a 500 for bad input", for strings that are not valid Unicode: a lone
surrogate (`"\\ud800"`) in a JSON body — as an object key, as a choice value that an error
message would repeat (`authority`, `scope.kind`, `effect`, `source`, `requested_by`,
`answer`, `remember` …), anywhere — is a 400 naming the field on every operation that takes a
body. The parser (config.api.SafeJSONParser) refuses it once for all of them."""

import json
import uuid

import pytest
from drf_spectacular.generators import SchemaGenerator

from config.api import SafeJSONRenderer, lone_surrogate_path

pytestmark = pytest.mark.django_db


def operations_with_a_body():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method not in ("post", "put", "patch"):
                continue
            content = (
                operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            )
            ref = content.get("schema", {}).get("$ref", "")
            component = schema["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {})
            fields = sorted(component.get("properties", {}))
            concrete = path
            for param in operation.get("parameters", []):
                if param["in"] == "path":
                    # A fixed, made-up id: collection must be the same in every test process.
                    value = (
                        str(uuid.uuid5(uuid.NAMESPACE_URL, path))
                        if param["schema"].get("format") == "uuid"
                        else "someone"
                    )
                    concrete = concrete.replace("{" + param["name"] + "}", value)
            yield method, concrete, fields


OPERATIONS = list(operations_with_a_body())


def send(api, method, path, raw: str):
    return getattr(api, method)(path, data=raw.encode("ascii"), content_type="application/json")


def test_it_covers_every_operation_that_takes_a_body():
    assert len(OPERATIONS) >= 20


@pytest.mark.parametrize(
    ("method", "path", "fields"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS]
)
def test_it_refuses_a_lone_surrogate_anywhere_in_any_body(api, method, path, fields):
    bodies = ['{"\\ud800": 1}', '{"a": {"\\udfff": "x"}}', '["\\ud800"]', '"\\ud800"']
    bodies += [json.dumps({field: "\ud800"}) for field in fields]  # json escapes it as \ud800
    bodies += [json.dumps({field: {"kind": "\udc00"}}) for field in fields]
    for raw in bodies:
        r = send(api, method, path, raw)
        assert r.status_code == 400, (raw, r.status_code, r.content[:300])
        body = r.json()
        assert body["code"] == "validation_error"
        assert "\\ud" not in r.content.decode().lower(), "the surrogate is not echoed back"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/api/v1/memories",
            {
                "user": "sam",
                "key": "a.b",
                "value": "x",
                "scope": {"kind": "user"},
                "authority": "\ud800",
            },
            "authority",
        ),
        (
            "/api/v1/memories",
            {"user": "sam", "key": "a.b", "value": "x", "scope": {"kind": "\ud800"}},
            "scope.kind",
        ),
        (
            "/api/v1/policy/rules",
            {
                "user": "sam",
                "capability": "media.voice",
                "effect": "\ud800",
                "source": "explicit-user",
                "scope": {"kind": "global"},
            },
            "effect",
        ),
        (
            "/api/v1/policy/rules",
            {
                "user": "sam",
                "capability": "media.voice",
                "effect": "allow",
                "source": "\ud800",
                "scope": {"kind": "global"},
            },
            "source",
        ),
        (
            "/api/v1/policy/decide",
            {"context": {"user": "sam"}, "capability": "tone.playful", "requested_by": "\ud800"},
            "requested_by",
        ),
        (
            "/api/v1/policy/answers",
            {
                "decision_id": str(uuid.uuid5(uuid.NAMESPACE_URL, "d1")),
                "answer": "\ud800",
                "remember": "once",
            },
            "answer",
        ),
        (
            "/api/v1/policy/answers",
            {
                "decision_id": str(uuid.uuid5(uuid.NAMESPACE_URL, "d2")),
                "answer": "allow",
                "remember": "\ud800",
            },
            "remember",
        ),
        (
            "/api/v1/memories",
            {
                "user": "sam",
                "key": "a.b",
                "value": "x",
                "scope": {"kind": "user"},
                "sources": ["\ud800"],
            },
            "sources.0",
        ),
    ],
)
def test_it_names_the_field_that_holds_the_lone_surrogate(api, path, body, field):
    r = send(api, "post", path, json.dumps(body))
    assert r.status_code == 400
    assert list(r.json()["errors"]) == [field]


def test_it_accepts_astral_characters_written_as_surrogate_pairs(api):
    """A pair (`\\ud83d\\ude00`, 😀) is valid Unicode: only lone halves are refused."""
    api.put("/api/v1/users/sam", {}, format="json")
    r = send(
        api,
        "post",
        "/api/v1/memories",
        '{"user": "sam", "key": "pet.name", "value": "Rex \\ud83d\\ude00", "scope": {"kind": '
        '"user"}}',
    )
    assert r.status_code == 201 and r.json()["memory"]["value"] == "Rex \U0001f600"


def test_it_finds_lone_surrogates_at_any_depth():
    deep = {"a": [{"b": ["ok", {"c": "x\ud800"}]}]}
    assert lone_surrogate_path(deep) == "a.0.b.1.c"
    assert lone_surrogate_path({"ok": ["fine", "\U0001f600"]}) is None


def test_it_renders_an_unencodable_string_as_an_escape_rather_than_failing():
    """The renderer's backstop: valid JSON, never a UnicodeEncodeError."""
    out = SafeJSONRenderer().render({"detail": "bad \ud800"})
    assert json.loads(out.decode("ascii")) == {"detail": "bad \ud800"}
