"""SPEC §10 C6: plain words. The served schema is walked whole: every operation (and every
webhook, V5) has a `summary` (a short phrase) and a `description` that opens with a full
sentence (rule numbers may only follow, never stand in for it); every parameter and every
field of every shape — request and response, each member of a `oneOf` — has a description;
every operation sits in exactly one of the groups the browsable docs show, in their order."""

import re

import pytest

pytestmark = pytest.mark.django_db

GROUPS = [
    "users and characters",
    "conversations and turns",
    "memories",
    "forgetting",
    "policy",
    "media jobs",
    "events",
]
METHODS = {"get", "put", "post", "patch", "delete"}
# A sentence: a capital letter first, at least six words, a full stop at its end.
SENTENCE = re.compile(r"^[A-Z`\"][^.]*?(\s+\S+){5,}?[^.]*[.?!](\s|$)", re.S)
RULE_CODE = re.compile(r"^(SPEC\b|§|[A-Z]{1,2}\d+\b)")


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return Client().get("/api/schema/?format=json").json()


def operations(schema):
    """Every operation of the API, and every webhook it sends (V5) as the receiver's one."""
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield f"{method.upper()} {path}", operation
    for name, item in schema["webhooks"].items():
        for method, operation in item.items():
            yield f"webhook {method.upper()} {name}", operation


def properties(name, shape, where=""):
    """Every (place, property schema) of a shape, nested objects and `oneOf` members too."""
    for index, member in enumerate(shape.get("oneOf", [])):
        if "$ref" not in member:
            yield from properties(name, member, f"{where}oneOf[{index}].")
    for prop_name, prop in (shape.get("properties") or {}).items():
        yield f"{name}.{where}{prop_name}", prop
        if prop.get("type") == "object" and prop.get("properties"):
            yield from properties(name, prop, f"{where}{prop_name}.")
        if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
            yield from properties(name, prop["items"], f"{where}{prop_name}[].")


def test_it_walks_every_operation_and_shape_c6(schema):
    """The walk below is not vacuous: the API's operations and shapes are all there."""
    assert len(list(operations(schema))) >= 42
    assert len(schema["components"]["schemas"]) >= 100


def test_it_gives_every_operation_a_summary_and_a_self_standing_description_c6(schema):
    missing = []
    for name, operation in operations(schema):
        summary = operation.get("summary", "")
        description = operation.get("description", "")
        if not summary or len(summary) > 60 or summary.endswith("."):
            missing.append((name, "summary", summary))
        if not SENTENCE.match(description) or RULE_CODE.match(description):
            missing.append((name, "description", description[:80]))
    assert missing == []


def test_it_gives_every_parameter_a_description_c6(schema):
    missing = [
        (name, p["name"])
        for name, operation in operations(schema)
        for p in operation.get("parameters", [])
        if not p.get("description")
    ]
    assert missing == []


def test_it_gives_every_field_of_every_shape_a_description_c6(schema):
    missing = [
        place
        for name, shape in schema["components"]["schemas"].items()
        for place, prop in properties(name, shape)
        if not prop.get("description")
    ]
    assert missing == []


def test_it_puts_every_operation_in_one_group_shown_in_order_c6(schema):
    tags = [t["name"] for t in schema["tags"]]
    assert tags == [g for g in GROUPS if g in tags]
    assert all(t.get("description") for t in schema["tags"])
    for name, operation in operations(schema):
        assert len(operation.get("tags", [])) == 1 and operation["tags"][0] in tags, name
    used = {operation["tags"][0] for _, operation in operations(schema)}
    assert used == set(tags)
    assert set(GROUPS) - used <= {"events"}  # the events feed (§14) is its own change


def test_it_groups_operations_by_the_groups_the_rules_name_c6():
    from config.schema import TAGS

    assert [t["name"] for t in TAGS] == GROUPS


def test_it_says_why_plan_memories_carry_no_ids_and_where_they_are_c5(schema):
    shapes = schema["components"]["schemas"]
    memories = shapes["PromptPlanOutput"]["properties"]["memories"]["description"]
    assert "no id" in memories and "(P4)" in memories
    for where in ("`excluded`", "stored plan", "`POST /memory/resolve`"):
        assert where in memories, where
    assert "id" not in shapes["PlanMemoryOutput"]["properties"]
    assert "no ids" in shapes["ResolveOutput"]["properties"]["prompt"]["description"]


def test_it_documents_the_asks_question_in_words_and_understood_c5(schema):
    operation = schema["paths"]["/api/v1/memory/ask"]["get"]
    [q] = [p for p in operation["parameters"] if p["name"] == "q"]
    assert q["description"].startswith("A question in words")
    assert '"Where do I live?"' in q["description"]
    answer = schema["components"]["schemas"]["AskOutput"]
    assert answer["properties"]["understood"]["type"] == "boolean"
    assert "understood" in answer["required"]


def test_it_states_the_imports_path_and_body_rule(schema):
    """A positive-mode finding: the import refuses a snapshot of another user; the schema says
    so on the operation and on the field."""
    operation = schema["paths"]["/api/v1/users/{user_ref}/import"]["post"]
    assert "`user.ref` differs from the `{user_ref}` in the path" in operation["description"]
    ref = schema["components"]["schemas"]["SnapshotUserInputRequest"]["properties"]["ref"]
    assert "must be the `{user_ref}` of the path" in ref["description"]


def test_it_gives_a_tombstone_scope_the_memory_scope_kinds_and_everywhere_c5(schema):
    shapes = schema["components"]["schemas"]
    tombstone = shapes["TombstoneOutput"]
    assert {"scope", "scope_id"} <= set(tombstone["required"])
    assert shapes["TombstoneScopeKindEnum"]["enum"] == [
        "user",
        "character",
        "conversation",
        "scene",
        "everywhere",
    ]
