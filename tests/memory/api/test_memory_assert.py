"""The memory endpoints (SPEC §10), through HTTP with a runtime token."""

import uuid

import pytest

from memory.models import MemoryRecord, Tombstone
from tests.factories import ConversationFactory, MessageFactory, UserFactory
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

USER_SCOPE = {"kind": "user"}


def assert_memory(api, **body):
    body.setdefault("scope", USER_SCOPE)
    return api.post("/api/v1/memories", body, format="json")


MEMORY_FIELDS = {
    "id",
    "user",
    "key",
    "value",
    "scope",
    "state",
    "state_detail",
    "status",
    "status_since",
    "authority",
    "confidence",
    "valid_from",
    "valid_until",
    "retracted_at",
    "recorded_at",
    "evidence_time",
    "sources",
    "supersedes",
    "version",
}


def test_it_creates_a_memory_with_every_field(api, sam):
    """§10: 201 with outcome `created` and the memory shape; times in RFC 3339 with Z."""
    r = assert_memory(
        api, user="sam", key="pet.name", value="Rex", valid_from="2026-08-05T12:00:00Z"
    )
    assert r.status_code == 201
    body = r.json()
    assert body["outcome"] == "created"
    assert set(body["memory"]) == MEMORY_FIELDS
    assert body["memory"]["valid_from"] == "2026-08-05T12:00:00Z"
    assert body["memory"]["recorded_at"].endswith("Z")
    assert body["memory"]["scope"] == {"kind": "user"}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"key": "Bad Key!"}, "key"),
        ({"value": ""}, "value"),
        ({"confidence": 2}, "confidence"),
        ({"confidence": "high"}, "confidence"),
        ({"scope": {"kind": "galaxy"}}, "scope.kind"),
        ({"scope": {"kind": "character"}}, "scope.character"),
        ({"scope": {"kind": "user", "character": "x"}}, "scope.character"),
        ({"scope": {"kind": "conversation", "conversation": "not-a-uuid"}}, "scope.conversation"),
        ({"valid_from": "yesterday"}, "valid_from"),
        (
            {"valid_from": "2026-08-02T00:00:00Z", "valid_until": "2026-08-01T00:00:00Z"},
            "valid_until",
        ),
        ({"sources": ["not-a-uuid"]}, "sources.0"),
        ({"user": "nobody"}, "user"),
        ({"colour": "blue"}, "colour"),
        ({"value": "nul\x00byte"}, "value"),
        ({"authority": "boss"}, "authority"),
    ],
)
def test_it_answers_bad_input_with_a_problem_naming_the_field(api, sam, patch, field):
    """W1 / §10: 400 validation_error naming the field; nothing stored."""
    body = {"user": "sam", "key": "pet.name", "value": "Rex", **patch}
    r = assert_memory(api, **body)
    errors = assert_problem(r, 400, "validation_error")["errors"]
    assert field in errors, errors
    assert MemoryRecord.objects.count() == 0


def test_it_refuses_malformed_json(api, sam):
    r = api.post("/api/v1/memories", data=b"{not json", content_type="application/json")
    assert_problem(r, 400, "validation_error")


def test_it_refuses_a_missing_or_revoked_token(client, api_token, sam):
    """§10: the API needs a Bearer token; a session never gets in."""
    assert_problem(client.get("/api/v1/memories?user=sam"), 401, "unauthenticated")
    from django.utils import timezone

    from config.models import ApiToken

    ApiToken.objects.update(revoked_at=timezone.now())
    r = client.get("/api/v1/memories?user=sam", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert_problem(r, 401, "unauthenticated")


def test_it_does_not_accept_a_session(client, sam):
    """§10: pages use sessions; the API never accepts one."""
    sam.is_staff = sam.is_superuser = True
    sam.save()
    client.force_login(sam)
    assert_problem(client.get("/api/v1/memories?user=sam"), 401, "unauthenticated")


def test_it_answers_unchanged_and_replayed_with_200(api, sam):
    """W2/W5 outcomes are 200."""
    first = assert_memory(
        api, user="sam", key="story.lantern.status", value="unlit", idempotency_key="a"
    )
    assert first.status_code == 201
    again = assert_memory(
        api, user="sam", key="story.lantern.status", value="unlit", idempotency_key="a"
    )
    assert (again.status_code, again.json()["outcome"]) == (200, "replayed")
    same = assert_memory(api, user="sam", key="story.lantern.status", value="Unlit")
    assert (same.status_code, same.json()["outcome"]) == (200, "unchanged")
    reused = assert_memory(
        api, user="sam", key="story.lantern.status", value="lit", idempotency_key="a"
    )
    assert_problem(reused, 409, "idempotency_key_reused")


def test_it_answers_an_authority_conflict_with_409(api, sam):
    """W6: explicit supersedes over a higher authority → 409 authority_conflict."""
    corrected = assert_memory(
        api, user="sam", key="pet.name", value="Max", authority="user-corrected"
    ).json()
    r = assert_memory(
        api, user="sam", key="pet.name", value="Rex", supersedes=corrected["memory"]["id"]
    )
    assert_problem(r, 409, "authority_conflict")


def test_it_lists_gets_confirms_corrects_retracts_and_forgets(api, sam):
    created = assert_memory(
        api, user="sam", key="pet.name", value="Rex", authority="rule-extracted"
    ).json()["memory"]
    listed = api.get("/api/v1/memories?user=sam&key=pet.name").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == created["id"]
    assert api.get(f"/api/v1/memories/{created['id']}").json()["value"] == "Rex"

    confirmed = api.post(f"/api/v1/memories/{created['id']}/confirm", {}, format="json")
    assert (
        confirmed.status_code == 201 and confirmed.json()["memory"]["authority"] == "user-confirmed"
    )
    corrected = api.post(
        f"/api/v1/memories/{confirmed.json()['memory']['id']}/correct",
        {"value": "Max"},
        format="json",
    )
    assert corrected.status_code == 201 and corrected.json()["memory"]["value"] == "Max"
    retracted = api.post(
        f"/api/v1/memories/{corrected.json()['memory']['id']}/retract", {}, format="json"
    )
    assert retracted.status_code == 200 and len(retracted.json()["records"]) == 3

    other = assert_memory(api, user="sam", key="dog.name", value="Bolt").json()["memory"]
    forgot = api.post(f"/api/v1/memories/{other['id']}/forget", {"everywhere": True}, format="json")
    assert forgot.status_code == 200
    assert set(forgot.json()) == {
        "id",
        "user",
        "scope",
        "scope_id",
        "key",
        "has_value_hash",
        "forgotten_at",
        "blocks_sources_before",
        "withheld_messages",
    }
    # C5: the scope in a memory scope's shape, `everywhere` for `*`, and its id beside it.
    assert forgot.json()["scope"] == {"kind": "everywhere"} and forgot.json()["scope_id"] == "*"
    assert forgot.json()["has_value_hash"] is False
    assert api.get(f"/api/v1/memories/{other['id']}").json()["value"] == ""

    tombstones = api.get("/api/v1/tombstones?user=sam").json()
    assert tombstones["count"] == 1
    assert api.delete(f"/api/v1/tombstones/{forgot.json()['id']}").status_code == 204
    assert Tombstone.objects.count() == 0


def test_it_answers_404_for_unknown_ids(api, sam):
    assert_problem(api.get(f"/api/v1/memories/{uuid.uuid4()}"), 404, "not_found")
    assert_problem(api.get("/api/v1/memories/not-a-uuid"), 404, "not_found")
    assert_problem(
        api.post(f"/api/v1/memories/{uuid.uuid4()}/confirm", {}, format="json"), 404, "not_found"
    )
    assert_problem(api.delete(f"/api/v1/tombstones/{uuid.uuid4()}"), 404, "not_found")


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


def test_it_shows_history_with_effective_ends(api, sam):
    """W11 through the API: rows in valid-time order with `effective_until`."""
    a = assert_memory(
        api, user="sam", key="pet.name", value="Rex", valid_from="2026-08-01T00:00:00Z"
    ).json()["memory"]
    b = assert_memory(
        api, user="sam", key="pet.name", value="Max", valid_from="2026-08-03T00:00:00Z"
    ).json()["memory"]
    r = api.get("/api/v1/memory/history?user=sam&key=pet.name")
    rows = r.json()["results"]
    assert [row["id"] for row in rows] == [a["id"], b["id"]]
    assert rows[0]["effective_until"] == "2026-08-03T00:00:00Z"
    assert rows[1]["effective_until"] is None


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
def test_c5_ask_answers_understood_false_for_what_is_not_a_question_it_understands(api, sam, q):
    """C5: `q` is a question in words; anything else answers `answer: null, understood: false`,
    never a silent null."""
    response = api.get("/api/v1/memory/ask", {"user": "sam", "q": q})
    assert response.status_code == 200
    assert response.json() == {"answer": None, "understood": False, "memory": None}


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
def test_c5_a_missing_context_wrapper_is_named_in_the_400(api, sam, rowan, path, body, inside):
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
def test_a_context_read_in_one_query_still_names_what_is_unknown(api, ctx, change, field):
    """SPEC §0: the conversation is read with its user in one query; when that finds nothing
    the answer still names the field that is wrong."""
    r = api.post("/api/v1/memory/resolve", {"context": {**ctx, **change}}, format="json")
    assert r.status_code == 400 and list(r.json()["errors"]) == [field], r.json()
