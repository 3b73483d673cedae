"""SPEC C7: JSON types are exact. Every field of every request body takes only its JSON type —
a boolean only `true`/`false`, an integer only a JSON integer, a number only a JSON number, a
string only a string — and `null` only where the schema says the field is nullable; anything
else is a 400 `validation_error` naming the field. The walk below takes every operation of
the OpenAPI document with a body, starts from a request that works (the conformance table of
test_schema_conformance.py, on a user holding every kind of row) and sends each field of the
body's schema — nested objects and the items of arrays included — with each wrong JSON type.
Runs on SQLite and on PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

import copy
import json

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework import serializers

from config.serializers import StrictSerializer, json_type
from tests.contract.test_schema_conformance import every_call

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SCHEMA = SchemaGenerator().get_schema(request=None, public=True)
COMPONENTS = SCHEMA["components"]["schemas"]
LEAF_TYPES = ("boolean", "integer", "number", "string")

# Each JSON type, and values of other JSON types a lenient reader would take for it.
WRONG = {
    "boolean": ["yes", "true", 1, 0],
    "integer": ["1", 1.0, 1.5, True],
    "number": ["0.5", True],
    "string": [1, 0.5, True],
}


def _deref(schema: dict) -> dict:
    while "$ref" in schema:
        schema = COMPONENTS[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _is_null(schema: dict) -> bool:
    return _deref(schema).get("type") == "null"


def _without_null_type(schema: dict) -> tuple[dict, bool]:
    """OpenAPI 3.1 (JSON Schema): `"type": ["string", "null"]` is a nullable string."""
    kinds = schema.get("type")
    if not isinstance(kinds, list) or "null" not in kinds:
        return schema, False
    rest = [kind for kind in kinds if kind != "null"]
    return {**schema, "type": rest[0] if len(rest) == 1 else rest}, True


def shape(schema: dict) -> tuple[dict, bool]:
    """The schema a property's value must have (references, `allOf` wrappers and the members
    of a `oneOf` merged: a scope's or a context's variants name their fields alike), and
    whether it is nullable (a `"null"` in its type list, or a null member of its `oneOf`)."""
    schema, nullable = _without_null_type(_deref(schema))
    if "allOf" in schema and len(schema["allOf"]) == 1:
        inner, inner_null = shape(schema["allOf"][0])
        return inner, nullable or inner_null
    if "oneOf" in schema:
        members = [m for m in schema["oneOf"] if not _is_null(m)]
        nullable = nullable or len(members) < len(schema["oneOf"])
        resolved = [shape(m)[0] for m in members]
        if len(resolved) == 1:
            return resolved[0], nullable
        properties: dict = {}
        for member in resolved:
            for name, prop in member.get("properties", {}).items():
                properties.setdefault(name, prop)
        return {"type": "object", "properties": properties}, nullable
    return schema, nullable


def fields_of(schema: dict, body, path: tuple = ()):
    """(path, JSON type, nullable) of every field of `schema` that a body can hold at `body`'s
    place: properties present or not, the objects present in the body walked into, and an
    array's items (at index 0, the body's first item when it has one)."""
    for name, prop in shape(schema)[0].get("properties", {}).items():
        if prop.get("readOnly"):
            continue
        inner, nullable = shape(prop)
        kind = inner.get("type")
        here = path + (name,)
        present = body.get(name) if isinstance(body, dict) else None
        if kind in LEAF_TYPES or "enum" in inner:
            yield here, kind or "string", nullable
        elif kind == "object" and isinstance(present, dict):
            yield here, "object", nullable
            yield from fields_of(inner, present, here)
        elif kind == "array":
            yield here, "array", nullable
            items, items_nullable = shape(inner.get("items", {}))
            if items.get("type") in LEAF_TYPES or "enum" in items:
                yield here + (0,), items.get("type", "string"), items_nullable
            elif items.get("type") == "object" and isinstance(present, list) and present:
                yield from fields_of(items, present[0], here + (0,))


def put_at(body: dict, path: tuple, value) -> dict:
    """A copy of `body` with `value` at `path` (an array's item 0 replaced, or the array made
    of that one item when the body has none)."""
    out = copy.deepcopy(body)
    place = out
    for step in path[:-1]:
        place = place[step]
    last = path[-1]
    if isinstance(last, int):
        if place:
            place[0] = value
        else:
            place.append(value)
    else:
        place[last] = value
    return out


def _array_place(body: dict, path: tuple) -> None:
    """Make sure the array holding an item path exists (an absent optional array)."""
    if isinstance(path[-1], int):
        place = body
        for step in path[:-2]:
            place = place[step]
        if not isinstance(place.get(path[-2]), list):
            place[path[-2]] = []


def request_body_schema(operation_id: str) -> dict:
    for item in SCHEMA["paths"].values():
        for operation in item.values():
            if isinstance(operation, dict) and operation.get("operationId") == operation_id:
                content = operation.get("requestBody", {}).get("content", {})
                return content.get("application/json", {}).get("schema", {})
    raise LookupError(operation_id)


def wrong_values(kind: str, nullable: bool) -> list:
    values = list(WRONG.get(kind, []))
    if kind in ("object", "array"):
        values = ["x", 1, True] + ([[]] if kind == "object" else [{}])
    if not nullable:
        values.append(None)
    return values


def send(api, method: str, path: str, body) -> object:
    return getattr(api, method)(path, data=json.dumps(body), content_type="application/json")


def test_it_refuses_every_wrong_json_type_in_every_field_of_every_body(api, monkeypatch):
    """C7: each field, sent with each wrong JSON type (and null where it is not nullable), is a
    400 `validation_error` naming exactly that field — the rest of the body being a request
    that works."""
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})
    w, table = every_call(api)
    walked: dict[str, int] = {}
    failures = []
    for name, path_parameters, _query, body, _status in table:
        if body is None:
            continue
        if body == "snapshot":
            body = api.get(f"/api/v1/users/{w.ref}/export").json()
        operation = _operation(name)
        path = "/api/v1" + operation["path"].format(**path_parameters)
        fields = list(fields_of(request_body_schema(name), body))
        walked[name] = len(fields)
        for field_path, kind, nullable in fields:
            base = copy.deepcopy(body)
            _array_place(base, field_path)
            dotted = ".".join(str(step) for step in field_path)
            for value in wrong_values(kind, nullable):
                r = send(api, operation["method"], path, put_at(base, field_path, value))
                errors = r.json().get("errors", {}) if r.status_code == 400 else {}
                if r.status_code != 400 or r.json()["code"] != "validation_error":
                    failures.append((name, dotted, value, r.status_code))
                elif list(errors) != [dotted]:
                    failures.append((name, dotted, value, "names", list(errors)))
    assert not failures, "\n".join(map(repr, failures))
    bodies = {n for n, *_rest, body, _s in table if body is not None}
    assert set(walked) == bodies
    assert walked["memory_forget"] == 2 and walked["memory_assert"] >= 15
    assert walked["user_import"] >= 100


def _operation(operation_id: str) -> dict:
    for path, item in SCHEMA["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and operation.get("operationId") == operation_id:
                return {"path": path.removeprefix("/api/v1"), "method": method}
    raise LookupError(operation_id)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", "Must be a JSON boolean: true or false."),
        ("on", "Must be a JSON boolean: true or false."),
        (1, "Must be a JSON boolean: true or false."),
    ],
)
def test_it_does_not_forget_everywhere_on_a_string_that_looks_true(api, sam, value, message):
    """C7: `{"everywhere": "yes"}` used to forget everywhere (DRF's lenient BooleanField);
    now it is a 400 naming `everywhere`, and nothing is forgotten."""
    from memory.models import Tombstone

    memory = api.post(
        "/api/v1/memories",
        {"user": "sam", "key": "pet.name", "value": "Rex", "scope": {"kind": "user"}},
        format="json",
    ).json()["memory"]
    r = send(api, "post", f"/api/v1/memories/{memory['id']}/forget", {"everywhere": value})
    assert r.status_code == 400
    assert r.json()["code"] == "validation_error"
    assert r.json()["errors"] == {"everywhere": [message]}
    assert not Tombstone.objects.exists()


def test_it_does_not_store_a_confidence_sent_as_a_string(api, sam):
    """C7: `"confidence": "0.5"` used to be stored as 0.5."""
    from memory.models import MemoryRecord

    body = {
        "user": "sam",
        "key": "pet.name",
        "value": "Rex",
        "scope": {"kind": "user"},
        "confidence": "0.5",
    }
    r = send(api, "post", "/api/v1/memories", body)
    assert r.status_code == 400
    assert r.json()["errors"] == {"confidence": ['Must be a JSON number (such as 0.5; not "0.5").']}
    assert not MemoryRecord.objects.exists()


def test_it_takes_an_integer_for_a_number_and_names_every_wrong_field_at_once(api, sam):
    """C7: a JSON integer is a JSON number (`"confidence": 1`); several wrong fields are named
    together, beside the other errors of the body."""
    ok = {"user": "sam", "key": "pet.name", "value": "Rex", "scope": {"kind": "user"}}
    r = send(api, "post", "/api/v1/memories", {**ok, "confidence": 1})
    assert r.status_code == 201 and r.json()["memory"]["confidence"] == 1.0
    r = send(api, "post", "/api/v1/memories", {**ok, "value": 7, "confidence": "1", "extra": 1})
    assert r.status_code == 400
    assert sorted(r.json()["errors"]) == ["confidence", "extra", "value"]


def _request_serializers():
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    for path, _regex, method, callback in generator.endpoints:
        if method not in ("POST", "PUT", "PATCH"):
            continue
        view = generator.create_view(callback, method)
        yield f"{method} {path}", view.schema.get_request_serializer()


def lenient_parts(serializer, path: str = "body") -> list[str]:
    """The places of a request serializer that C7's one check would not reach: an object that
    is not a StrictSerializer, or a field whose JSON type `config.serializers.JSON_TYPES` does
    not know."""
    found = []
    if isinstance(serializer, serializers.ListSerializer):
        return lenient_parts(serializer.child, f"{path}.0")
    if not isinstance(serializer, StrictSerializer):
        found.append(f"{path}: {type(serializer).__name__} is not a StrictSerializer")
    for name, field in serializer.fields.items():
        here = f"{path}.{name}"
        if field.read_only:
            continue
        if isinstance(field, (serializers.Serializer, serializers.ListSerializer)):
            found += lenient_parts(field, here)
        elif json_type(field) is None:
            found.append(f"{here}: {type(field).__name__} has no JSON type")
        elif isinstance(field, serializers.ListField):
            child = field.child
            if isinstance(child, serializers.Serializer):
                found += lenient_parts(child, f"{here}.0")
            elif json_type(child) is None:
                found.append(f"{here}.0: {type(child).__name__} has no JSON type")
    return found


def test_it_reaches_every_field_of_every_request_body_with_the_one_check():
    """C7 in one place: every operation's request serializer, and every object in it, is a
    `StrictSerializer`, and every field is of a kind whose JSON type the check knows — so a
    new body cannot read a field leniently."""
    seen = 0
    for operation, serializer_class in _request_serializers():
        assert serializer_class is not None, operation
        seen += 1
        problems = lenient_parts(serializer_class())
        assert not problems, (operation, problems)
    assert seen >= 20


def test_it_finds_a_lenient_object_or_field_in_a_request_serializer():
    """C7: the check above can fail — a plain Serializer, or a field class outside the JSON
    types, is found."""

    class Opaque(serializers.Field):
        def to_internal_value(self, data):
            return data

    class Loose(serializers.Serializer):
        flag = serializers.BooleanField()

    class Body(StrictSerializer):
        loose = Loose()
        opaque = Opaque()

    assert lenient_parts(Body()) == [
        "body.loose: Loose is not a StrictSerializer",
        "body.opaque: Opaque has no JSON type",
    ]
