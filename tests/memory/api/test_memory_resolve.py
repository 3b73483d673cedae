"""`POST /memory/resolve` (SPEC §3, §10): the answer with its prompt and explain, a context
refused when it names another user's conversation or leaves out its wrapper, in a constant
number of queries."""

import json

import pytest

from tests.factories import CharacterFactory, ConversationFactory, MessageFactory, UserFactory
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory, forget, priya

pytestmark = pytest.mark.django_db


def test_it_resolves_with_prompt_and_explain(api, sam, ctx, conv):
    """§5/§10: resolve answers active/excluded and, separately, the projection."""
    msg = MessageFactory(conversation=conv)
    harbor = assert_memory(
        api, user="sam", key="basil_plant.name", value="Harbor", sources=[str(msg.pk)]
    ).json()["memory"]
    api.post(f"/api/v1/memories/{harbor['id']}/correct", {"value": "Marlowe"}, format="json")
    unsupported = assert_memory(api, user="sam", key="letter.status", value="sent").json()["memory"]
    r = api.post("/api/v1/memory/resolve", {"context": ctx, "explain": harbor["id"]}, format="json")
    assert r.status_code == 200
    body = r.json()
    assert [m["value"] for m in body["active"] if m["key"] == "basil_plant.name"] == ["Marlowe"]
    assert {"id": harbor["id"], "reason": "superseded"} in body["excluded"]
    assert [p["value"] for p in body["prompt"]] == ["Marlowe"]
    assert body["prompt"][0] == {
        "key": "basil_plant.name",
        "label": "Basil plant's name",
        "value": "Marlowe",
        "certainty": "confirmed",
        "scope": {"kind": "user"},
    }
    assert {"id": unsupported["id"], "reason": "unsupported"} in body["prompt_excluded"]
    assert body["explain"]["id"] == harbor["id"] and body["explain"]["step"] == "R5"
    assert body["resolver_version"]


def test_it_refuses_a_context_with_a_conversation_of_another_user(api, sam, rowan):
    other = ConversationFactory(user=UserFactory(username="mallory"), character=rowan)
    r = api.post(
        "/api/v1/memory/resolve",
        {"context": {"user": "sam", "conversation": str(other.pk)}},
        format="json",
    )
    assert "context.conversation" in assert_problem(r, 400, "validation_error")["errors"]


@pytest.mark.parametrize(
    "path, body, inside",
    [
        (
            "/api/v1/memory/resolve",
            {"user": "sam", "character": "captain-rowan"},
            "(`character`, `user` go inside it)",
        ),
        (
            "/api/v1/policy/decide",
            {"user": "sam", "capability": "tone.playful", "requested_by": "user"},
            "(`user` goes inside it)",
        ),
    ],
)
def test_it_names_a_missing_context_wrapper_in_the_400_c5(api, sam, rowan, path, body, inside):
    """C5: a body that left out the required `context` object names `context` in `errors`,
    and says that the context's fields put at the top belong inside it."""
    response = api.post(path, body, format="json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert errors["context"] == [f"This field is required {inside}."]
    assert errors["user"] == ["Unknown field: it belongs inside `context`."]
    assert response.json()["detail"].startswith("context: ")


@pytest.mark.parametrize("n", [10, 1000])
def test_it_resolves_in_a_constant_number_of_queries(
    api, sam, ctx, conv, n, django_assert_num_queries
):
    """DESIGN: resolve runs a constant number of SQL queries, whatever the number of records."""
    from config.clock import db_now
    from memory.models import MemoryRecord, MemorySource

    now = db_now()
    msg = MessageFactory(conversation=conv)
    rows = [
        MemoryRecord(
            user=sam,
            key=f"fact.k{i % 50}",
            value=f"v{i}",
            scope_kind="user",
            scope_id="user:sam",
            valid_from=now,
            recorded_at=now,
            evidence_time=now,
            version=i + 1,
            authority="rule-extracted",
        )
        for i in range(n)
    ]
    MemoryRecord.objects.bulk_create(rows)
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=msg) for r in rows])
    body = {"context": {**ctx, "now": "2030-01-01T00:00:00Z"}}
    api.post("/api/v1/memory/resolve", body, format="json")  # a warm process (config.catalog)
    # The token; the conversation with its user, profile and character; the context's memory
    # state (version, records with their sources, tombstones, retractions, the secret) in one
    # statement. The key registry comes from the catalog cache.
    with django_assert_num_queries(3):
        r = api.post("/api/v1/memory/resolve", body, format="json")
    assert r.status_code == 200
    assert len(r.json()["active"]) == min(n, 50)
    # Without a conversation the user is read instead (with the profile).
    body = {"context": {"user": sam.username, "now": "2030-01-01T00:00:00Z"}}
    with django_assert_num_queries(3):
        r = api.post("/api/v1/memory/resolve", body, format="json")
    assert r.status_code == 200 and len(r.json()["active"]) == min(n, 50)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"user": "nobody"}, "context.user"),
        ({"conversation": "8f7b4a52-0000-4000-8000-000000000000"}, "context.conversation"),
        ({"conversation": "not-a-uuid"}, "context.conversation"),
        ({"character": "someone-else"}, "context.character"),
    ],
)
def test_it_reads_the_context_in_one_query_and_still_names_what_is_unknown(api, ctx, change, field):
    """SPEC §0: the conversation is read with its user in one query; when that finds nothing
    the answer still names the field that is wrong."""
    r = api.post("/api/v1/memory/resolve", {"context": {**ctx, **change}}, format="json")
    assert r.status_code == 400 and list(r.json()["errors"]) == [field], r.json()


def _resolve(api, context) -> dict:
    r = api.post("/api/v1/memory/resolve", {"context": context}, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def test_it_masks_a_withheld_memory_in_active_and_leaves_it_out_of_the_prompt_f7_2(api, sam, ctx):
    """F7.2: after forgetting "Priya", `people.priya.works_at` and the routine naming her stay
    in `active` with value null and the key's free part masked, and are in `prompt_excluded`
    with reason `withheld`; "green tea" is in the prompt, and no answer carries the words."""
    ids = priya(api)
    forget(api, ids["sister"])
    body = _resolve(api, ctx)
    active = {m["id"]: m for m in body["active"]}
    assert (active[ids["works"]]["key"], active[ids["works"]]["value"]) == (
        "people.*.works_at",
        None,
    )
    assert (active[ids["visits"]]["key"], active[ids["visits"]]["value"]) == ("user.routine", None)
    assert active[ids["tea"]]["value"] == "green tea"
    assert [p["value"] for p in body["prompt"]] == ["green tea"]
    assert {"id": ids["works"], "reason": "withheld"} in body["prompt_excluded"]
    assert {"id": ids["visits"], "reason": "withheld"} in body["prompt_excluded"]
    text = json.dumps(body)
    assert "Priya" not in text and "priya" not in text and "Globex" not in text


def test_it_withholds_only_where_the_forgets_scope_reaches_f7_2(api, sam, ctx, rowan):
    """F7.2 with F6's mapping: a forget in Rowan's scope withholds the user's routine in a
    conversation with Rowan, not in a conversation with another character."""
    other = ConversationFactory(user=sam, character=CharacterFactory(slug="other"))
    ids = priya(api)
    rowans = assert_memory(
        api,
        key="family.sister.name",
        value="Priya",
        authority="user-confirmed",
        scope={"kind": "character", "character": rowan.slug},
    ).json()["memory"]["id"]
    tombstone = forget(api, rowans)
    assert tombstone["scope_id"] == f"character:sam:{rowan.slug}"
    here = _resolve(api, ctx)
    assert {"id": ids["visits"], "reason": "withheld"} in here["prompt_excluded"]
    there = _resolve(api, {"user": "sam", "character": "other", "conversation": str(other.pk)})
    assert "visiting Priya on Sundays" in [p["value"] for p in there["prompt"]]
    assert ids["visits"] not in [e["id"] for e in there["prompt_excluded"]]


def test_it_gives_withheld_precedence_over_memory_off_f7_2_i8(api, sam, ctx):
    """F7.2: the reason `withheld` wins over `memory-off` (the user's `use` switch off)."""
    ids = priya(api)
    forget(api, ids["sister"])
    r = api.put("/api/v1/users/sam/memory-settings", {"use": False}, format="json")
    assert r.status_code == 200, r.content
    reasons = {e["id"]: e["reason"] for e in _resolve(api, ctx)["prompt_excluded"]}
    assert reasons[ids["works"]] == reasons[ids["visits"]] == "withheld"
    assert reasons[ids["tea"]] == "memory-off"


def test_it_keeps_the_withheld_record_winning_its_slot_f7_2(api, sam, ctx):
    """F7.2: withholding comes after the resolver (R1–R8 unchanged): the withheld routine
    still wins its slot, so the lower one of the slot never shows through."""
    ids = priya(api)
    lower = assert_memory(
        api, key="user.routine", value="visiting Mum on Sundays", valid_from="2026-02-01T00:00:00Z"
    ).json()["memory"]["id"]
    forget(api, ids["sister"])
    body = _resolve(api, ctx)
    assert {"id": lower, "reason": "lower-precedence"} in body["excluded"]
    assert {"id": ids["visits"], "reason": "withheld"} in body["prompt_excluded"]
    assert [p["key"] for p in body["prompt"]] == ["user.likes"]


# The token, the context, and the context's memory state in one statement (the registry is
# cached), whether keys narrow the resolve or not (the one door, `memory.state`).
RESOLVE_QUERIES = 3


@pytest.mark.parametrize("key", [None, "people.priya.works_at"])
def test_it_resolves_withheld_memories_in_a_constant_number_of_queries_f7_2(
    api, sam, ctx, key, django_assert_num_queries
):
    """F7.2 costs the resolve of a context no query, for every key or some: each record read
    carries the tombstones withholding it, and the state read holds every tombstone of the
    user, so the scopes of those withholding it are at hand."""
    ids = priya(api)
    body = {"context": {**ctx, "now": "2030-01-01T00:00:00Z"}} | ({"keys": [key]} if key else {})
    api.post("/api/v1/memory/resolve", body, format="json")  # warm the catalog
    with django_assert_num_queries(RESOLVE_QUERIES):
        api.post("/api/v1/memory/resolve", body, format="json")
    forget(api, ids["sister"])
    api.post("/api/v1/memory/resolve", body, format="json")
    with django_assert_num_queries(RESOLVE_QUERIES):
        r = api.post("/api/v1/memory/resolve", body, format="json")
    assert {"id": ids["works"], "reason": "withheld"} in r.json()["prompt_excluded"]
