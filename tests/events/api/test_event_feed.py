"""GET /api/v1/events (SPEC V2): the feed pages by an opaque cursor, filters by user and type,
answers 410 `cursor_expired` past the retention, and reads in one query."""

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.scopes import Scope
from events.feed import Position, encode_cursor
from events.models import Event
from memory import forgetting
from memory import services as memory_services
from tests.factories import UserFactory
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    sam, ana = UserFactory(username="sam"), UserFactory(username="ana")
    a = memory_services.memory_assert(
        user=sam, key="pet.name", value="Rex", scope=Scope("user")
    ).record
    memory_services.memory_assert(user=ana, key="pet.name", value="Max", scope=Scope("user"))
    forgetting.memory_forget(record_id=a.id)
    memory_services.memory_settings_set(user=ana, changed_by="api", learn=False)
    return sam, ana


def ids(body):
    return [e["id"] for e in body["results"]]


def stored():
    return [f"evt_{pk}" for pk in Event.objects.order_by("txid", "id").values_list("id", flat=True)]


def test_it_answers_every_event_in_order_with_its_shape(api, world):
    body = api.get("/api/v1/events").json()
    assert ids(body) == stored()
    assert [e["type"] for e in body["results"]] == [
        "memory.created",
        "memory.created",
        "memory.forgotten",
        "settings.changed",
    ]
    first = body["results"][0]
    assert set(first) == {"id", "type", "user", "occurred_at", "data"}
    assert first["user"] == "sam" and first["occurred_at"].endswith("Z")
    assert body["results"][3]["data"] == {"learn": False, "use": True, "changed_by": "api"}


def test_it_pages_by_cursor_and_hands_back_the_same_position_when_nothing_is_new(api, world):
    seen, after = [], None
    for _ in range(10):
        body = api.get("/api/v1/events", {"limit": 1, **({"after": after} if after else {})}).json()
        if not body["results"]:
            break
        seen += ids(body)
        after = body["next"]
    assert seen == stored()
    again = api.get("/api/v1/events", {"after": after}).json()
    assert again["results"] == [] and again["next"]
    # New events appear after the cursor, not before it.
    memory_services.memory_settings_set(user=world[0], changed_by="api", use=False)
    later = api.get("/api/v1/events", {"after": again["next"]}).json()
    assert [e["type"] for e in later["results"]] == ["settings.changed"]


def test_it_filters_by_user_and_by_type(api, world):
    body = api.get("/api/v1/events", {"user": "ana"}).json()
    assert [(e["user"], e["type"]) for e in body["results"]] == [
        ("ana", "memory.created"),
        ("ana", "settings.changed"),
    ]
    body = api.get("/api/v1/events", {"type": "memory.forgotten"}).json()
    assert [(e["user"], e["type"]) for e in body["results"]] == [("sam", "memory.forgotten")]


def test_it_refuses_a_cursor_older_than_the_retention_with_410(api, world, settings):
    settings.EVENTS_RETENTION_DAYS = 7
    old = encode_cursor(Position(0, 1), timezone.now() - timedelta(days=7, minutes=1))
    assert_problem(api.get("/api/v1/events", {"after": old}), 410, "cursor_expired")
    fresh = encode_cursor(Position(0, 1), timezone.now() - timedelta(days=6, hours=23))
    assert api.get("/api/v1/events", {"after": fresh}).status_code == 200


@pytest.mark.parametrize(
    "query, field",
    [
        ({"after": "not-a-cursor"}, "after"),
        ({"after": "MS4xLjE"}, "after"),  # base64 of a cursor with too few parts
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"type": "memory.exploded"}, "type"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_it_refuses_bad_input_as_problems(api, query, field):
    assert_problem(api.get("/api/v1/events", query), 400, "validation_error", field)


def test_it_needs_a_runtime_token(client):
    assert_problem(client.get("/api/v1/events"), 401, "unauthenticated")


def test_it_holds_only_user_deleted_in_a_deleted_users_feed(api, world):
    from conversations.services import user_delete

    user_delete(user=world[0])
    body = api.get("/api/v1/events", {"user": "sam"}).json()
    assert [(e["type"], e["data"]) for e in body["results"]] == [("user.deleted", {})]


@pytest.mark.parametrize("n", [3, 60])
def test_it_reads_a_page_in_one_query(api, world, n, django_assert_num_queries):
    sam = world[0]
    for i in range(n):
        memory_services.memory_assert(
            user=sam, key=f"fact.k{i}", value=f"v{i}", scope=Scope("user")
        )
    with django_assert_num_queries(2):  # the token, the page
        body = api.get("/api/v1/events", {"limit": 50}).json()
    assert len(body["results"]) == min(n + 4, 50)
