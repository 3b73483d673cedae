"""SPEC V5: events speak the API's words — E1 states (a retraction carries `retracted_at`,
"retracted" is not a state), scopes in the API's shape with no null member and no scene id,
`{"kind": "everywhere"}` for a forget everywhere, the records' own times — and every event
type's `data` has its own schema in the OpenAPI 3.1 document, whose `webhooks` section
describes one webhook per event type with the signature headers and a verification example
that verifies a real delivery."""

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema
import pytest
from drf_spectacular.validation import validate_schema

from conversations.scopes import Scope
from conversations.services import conversation_delete, user_delete
from events import delivery
from events.models import Delivery, Event, Lane
from events.schemas import VERIFY_PYTHON, WHEN
from events.webhooks import endpoint_create
from memory import forgetting
from memory import services as memory_services
from memory.models import MemoryRecord, Tombstone
from policy import services as policy_services
from tests.factories import CharacterFactory, ConversationFactory, UserFactory

pytestmark = pytest.mark.django_db

EVERY_TYPE = {
    "memory.created",
    "memory.changed",
    "memory.forgotten",
    "tombstone.deleted",
    "settings.changed",
    "policy.changed",
    "conversation.deleted",
    "user.deleted",
}


def z(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@pytest.fixture
def schema(client):
    return client.get("/api/schema/?format=json").json()


def _closed(node):
    """The OpenAPI 3.1 schema (JSON Schema 2020-12) with every object closed, so a member the
    schema does not name fails (no undocumented field)."""
    if isinstance(node, list):
        return [_closed(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _closed(v) for k, v in node.items()}
    if "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def validator(schema: dict, name: str, part: dict | None = None):
    """A validator of the component `name` (or of `part`, a schema inside it)."""
    components = _closed(copy.deepcopy(schema["components"]))
    root = _closed(part) if part is not None else {"$ref": f"#/components/schemas/{name}"}
    return jsonschema.Draft202012Validator({**root, "components": components})


@pytest.fixture
def session():
    """A scripted session: a correction, a retraction, a memory of a scene, a forget in a
    character's scope, a forget everywhere and its undo, the switches, a rule, a deleted
    conversation and a deleted user."""
    sam = UserFactory(username="sam")
    memory_services.ensure_profile(sam)
    conv = ConversationFactory(user=sam, character=CharacterFactory(slug="rowan"))
    first = memory_services.memory_assert(
        user=sam, key="pet.name", value="Rexalot", scope=Scope("user")
    ).record
    corrected = memory_services.memory_correct(record_id=first.id, value="Quillmoor").record
    memory_services.memory_retract(record_id=corrected.id)
    scene = memory_services.memory_assert(
        user=sam,
        key="story.lantern",
        value="lit",
        scope=Scope("scene", conversation=str(conv.pk), scene="the-secret-cove"),
    ).record
    rowan = memory_services.memory_assert(
        user=sam, key="user.mood", value="tired", scope=Scope("character", character="rowan")
    ).record
    forgetting.memory_forget(record_id=rowan.id)
    anywhere = memory_services.memory_assert(
        user=sam, key="user.city", value="Lisbon", scope=Scope("user")
    ).record
    everywhere = forgetting.memory_forget(record_id=anywhere.id, everywhere=True)
    forgetting.tombstone_delete(tombstone_id=everywhere.pk)
    memory_services.memory_settings_set(user=sam, changed_by="api", learn=False)
    policy_services.rule_create(
        user=sam,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    conversation_delete(conversation_id=conv.pk)
    ana = UserFactory(username="ana")
    user_delete(user=ana)
    return {"first": first, "corrected": corrected, "scene": scene, "conv": conv}


def feed(api) -> list[dict]:
    return api.get("/api/v1/events", {"limit": 500}).json()["results"]


def test_it_gives_every_event_type_data_that_its_own_schema_allows(api, schema, session):
    """V5: each event of the session validates against the document's `Event` (a `oneOf` with
    `type` as discriminator) and its `data` against its own type's schema, closed to members
    the schema does not name."""
    event = schema["components"]["schemas"]["Event"]
    assert event["discriminator"]["propertyName"] == "type"
    mapping = event["discriminator"]["mapping"]
    assert set(mapping) == EVERY_TYPE
    events = feed(api)
    assert {e["type"] for e in events} == EVERY_TYPE
    whole = validator(schema, "Event")
    for e in events:
        whole.validate(e)
        variant = mapping[e["type"]].rsplit("/", 1)[1]
        data = schema["components"]["schemas"][variant]["properties"]["data"]
        data = data["allOf"][0] if "allOf" in data else data
        if "$ref" in data:  # each type's own component, named for it
            name = "".join(part.title() for part in e["type"].split(".")) + "Data"
            assert data == {"$ref": f"#/components/schemas/{name}"}
        validator(schema, variant, data).validate(e["data"])
    # A type's data is refused by another type's schema: each schema is its own.
    created = next(e for e in events if e["type"] == "memory.created")
    with pytest.raises(jsonschema.ValidationError):
        validator(schema, "MemoryForgottenData").validate(created["data"])


def test_it_shapes_every_scope_as_the_api_does_without_nulls_or_scene_ids(api, session):
    """V5: a scope is the API's scope object with no null member and no scene's id (the user's
    words); a forget everywhere is `{"kind": "everywhere"}`."""
    events = feed(api)
    scopes = [e["data"]["scope"] for e in events if "scope" in e["data"]]
    conv = str(session["conv"].pk)
    assert scopes == [
        {"kind": "user"},
        {"kind": "user"},
        {"kind": "scene", "conversation": conv},
        {"kind": "character", "character": "rowan"},
        {"kind": "character", "character": "rowan"},
        {"kind": "user"},
        {"kind": "everywhere"},
    ]
    assert "the-secret-cove" not in json.dumps(events)
    assert all(None not in scope.values() for scope in scopes)


def test_it_gives_a_retracted_record_its_e1_state_and_retracted_at(api, session):
    """V5: the retraction's `memory.changed` carries the state the API answers for the record
    (`expired`), with `retracted_at` — never a `retracted` state — at the record's own time."""
    corrected = session["corrected"]
    row = MemoryRecord.objects.get(pk=corrected.id)
    answered = api.get(f"/api/v1/memories/{corrected.id}").json()
    [changed] = [
        e
        for e in feed(api)
        if e["type"] == "memory.changed" and e["data"]["memory"] == corrected.id
    ]
    assert changed["data"] == {
        "memory": corrected.id,
        "state": answered["state"],
        "by": None,
        "valid_until": answered["valid_until"],
        "retracted_at": answered["retracted_at"],
    }
    assert answered["state"] == "expired"
    assert changed["occurred_at"] == z(row.retracted_at)
    states = {e["data"]["state"] for e in feed(api) if e["type"] == "memory.changed"}
    assert states == {"superseded", "expired"}


def test_it_gives_the_supersede_of_a_correction_the_state_the_api_answers(api, session):
    """V5: the correction's `memory.changed` names the E1 state of the record it superseded;
    the retraction that later closed it too (W10) names the state the API answers now."""
    first = session["first"]
    changed, closed = [
        e for e in feed(api) if e["type"] == "memory.changed" and e["data"]["memory"] == first.id
    ]
    assert changed["data"] == {
        "memory": first.id,
        "state": "superseded",
        "by": session["corrected"].id,
    }
    answered = api.get(f"/api/v1/memories/{first.id}").json()
    assert closed["data"]["state"] == answered["state"] == "expired"
    assert closed["data"]["retracted_at"] == answered["retracted_at"]
    row = MemoryRecord.objects.get(pk=session["corrected"].id)
    assert changed["occurred_at"] == z(row.recorded_at)


def test_it_carries_the_forgets_own_time(api, session):
    """V5: a forget's event carries the tombstone's `forgotten_at` (the forget in Rowan's
    scope; the one everywhere was undone)."""
    forgotten, _everywhere = [e for e in feed(api) if e["type"] == "memory.forgotten"]
    tombstone = Tombstone.objects.get(pk=forgotten["data"]["tombstone"])
    assert forgotten["occurred_at"] == z(tombstone.forgotten_at)


def _name(type_: str) -> str:
    return "".join(part.title() for part in type_.split("."))


def test_it_describes_each_event_type_as_its_own_webhook(schema):
    """V5: the document's `webhooks` has one webhook per event type, whose body is that type's
    event (the envelope and that type's own `data`), with the Standard Webhooks headers and
    the verification example."""
    webhooks = schema["webhooks"]
    assert list(webhooks) == [
        "memory.created",
        "memory.changed",
        "memory.forgotten",
        "tombstone.deleted",
        "settings.changed",
        "policy.changed",
        "conversation.deleted",
        "user.deleted",
    ]
    shapes = schema["components"]["schemas"]
    for type_, path_item in webhooks.items():
        assert list(path_item) == ["post"]
        post = path_item["post"]
        assert post["summary"] == WHEN[type_][0]
        assert post["description"].startswith(f"{WHEN[type_][1]}\n\n")
        body = post["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{_name(type_)}Event"}
        event = shapes[f"{_name(type_)}Event"]
        kind = event["properties"]["type"]["allOf"][0]["$ref"].rsplit("/", 1)[1]
        assert shapes[kind]["enum"] == [type_]
        data = event["properties"]["data"]
        if type_ == "user.deleted":  # nothing: the event's `user` is the ref to erase (V1)
            assert (data["properties"], data["additionalProperties"]) == ({}, False)
        else:
            assert data["allOf"] == [{"$ref": f"#/components/schemas/{_name(type_)}Data"}]
        headers = {p["name"]: p for p in post["parameters"]}
        assert list(headers) == ["webhook-id", "webhook-timestamp", "webhook-signature"]
        assert all(p["in"] == "header" and p["required"] for p in headers.values())
        assert f"```python\n{VERIFY_PYTHON}\n```" in post["description"]
        assert sorted(post["responses"]) == ["200", "410"]


def test_it_documents_the_webhooks_in_a_valid_openapi_3_1_document(schema):
    """V5: the document is OpenAPI 3.1 and stays valid with its webhooks in `webhooks`, the
    member 3.1 defines for them (no `x-webhooks` extension)."""
    validate_schema(schema)
    assert schema["openapi"] == "3.1.0"
    assert "webhooks" in schema and "x-webhooks" not in schema


class _Capture(BaseHTTPRequestHandler):
    """A loopback receiver that keeps each request's raw body and headers as they arrived."""

    received: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        self.received.append((body, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()


@pytest.fixture
def capture():
    _Capture.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, _Capture.received
    server.shutdown()
    server.server_close()


def test_it_verifies_a_real_delivery_with_the_documented_python(schema, capture, settings):
    """V5: the verification example every webhook's description carries, run as written,
    accepts a delivery the worker's code really sent and refuses it changed or under another
    secret."""
    settings.WEBHOOK_ALLOW_HTTP = settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    server, received = capture
    endpoint, secret = endpoint_create(url=f"http://127.0.0.1:{server.server_address[1]}/in")
    sam = UserFactory(username="sam")
    memory_services.memory_assert(user=sam, key="pet.name", value="Rexalot", scope=Scope("user"))
    event = Event.objects.get(type="memory.created")
    lane = Lane.objects.create(endpoint=endpoint, user_ref="sam")
    pending = Delivery.objects.create(lane=lane, event=event)
    lane = Lane.objects.select_related("endpoint").get(pk=lane.pk)
    assert delivery.attempt(lane, pending, lambda *a: None) is True

    description = schema["webhooks"]["memory.created"]["post"]["description"]
    code = description.split("```python\n", 1)[1].split("\n```", 1)[0]
    namespace: dict = {}
    exec(code, namespace)  # the documented example, word for word
    verify = namespace["verify"]
    [(body, headers)] = received
    assert json.loads(body)["id"] == headers["webhook-id"] == f"evt_{event.pk}"
    assert verify(secret, headers, body) is True
    assert verify(secret, headers, body.replace(b"memory.created", b"memory.changed")) is False
    other, _ = endpoint_create(url=endpoint.url)
    assert verify(other.secret, headers, body) is False
    stale = {**headers, "webhook-timestamp": str(int(headers["webhook-timestamp"]) - 301)}
    assert verify(secret, stale, body) is False


def test_it_leaves_events_stored_with_no_null_scope_member(session):
    """V5: no stored event has a null member in its scope."""
    for data in Event.objects.values_list("data", flat=True):
        if "scope" in data:
            assert None not in data["scope"].values()
