"""Reuse what did not change (docs/DESIGN.md; SPEC §3 R3, R5, R7): a process keeps the memory
state it read or wrote for a context at the user's memory version (memory.triggers), and the
resolution it made with the valid times it holds for. A plan right after its create reads
back only the rows the create wrote, a turn whose message teaches nothing reads no records
once those are read back, and neither resolves anything again — and answers what
an uncached read answers; a write from anywhere else, or a `now` past the window, is seen."""

import pytest
from django.db import connection

from memory import current, storage
from memory.models import MemoryRecord
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from tests.helpers import committed

pytestmark = pytest.mark.django_db

PLAN = {"budget": 2000, "capabilities": ["tone.playful"]}


@pytest.fixture
def conv():
    user = UserFactory(username="cached")
    return ConversationFactory(user=user, character=CharacterFactory(slug="rowan"))


class Calls:
    """Counts the calls of a function while it still does its work."""

    def __init__(self, monkeypatch, owner, name):
        self.n = 0
        real = getattr(owner, name)

        def counted(*args, **kwargs):
            self.n += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


def turn(api, conv, key, content, plan=None):
    body = {"turn_key": key, "content": content, **({"plan": plan} if plan else {})}
    with committed():
        r = api.post(f"/api/v1/conversations/{conv.pk}/turns", body, format="json")
    assert r.status_code == 201, r.json()
    return r.json()


def plan_of(api, turn_id, **params):
    r = api.get(
        f"/api/v1/turns/{turn_id}/prompt-plan",
        {"budget": 2000, "capabilities": "tone.playful", **params},
    )
    assert r.status_code == 200, r.json()
    body = r.json()
    for decision in body["policy"]:
        decision.pop("decision_id")
    return body


def uncached(api, turn_id, **params):
    storage.MEMORY_CACHE.clear()
    return plan_of(api, turn_id, **params)


def test_it_reads_and_resolves_nothing_again_for_a_plan_right_after_its_create(
    api, conv, monkeypatch
):
    turn(api, conv, "a", "My dog's name is Rex. I like green tea.")
    created = turn(api, conv, "b", "We watered the basil. The basil plant is named Harbor.")
    parsed = Calls(monkeypatch, storage, "parse_context_state")
    resolved = Calls(monkeypatch, current, "resolve")
    caught_up = storage.MEMORY_CACHE.caught_up
    cached = plan_of(api, created["id"])
    # The create kept what it wrote at the version it read, so the plan reads back only the
    # rows it wrote (caught up, not read whole), finds them as they are kept and resolves
    # nothing again.
    assert (parsed.n, resolved.n, storage.MEMORY_CACHE.caught_up) == (1, 0, caught_up + 1)
    assert {m["value"] for m in cached["memories"]} >= {"Rex", "Harbor", "green tea"}
    assert cached == uncached(api, created["id"])
    assert (parsed.n, resolved.n) == (2, 1)  # the uncached read did both


def test_it_resolves_nothing_again_for_a_turn_that_teaches_nothing(api, conv, monkeypatch):
    # A user's first write starts their version row, which every process reads whole after.
    turn(api, conv, "first", "I like green tea.")
    turn(api, conv, "a", "My dog's name is Rex.", PLAN)
    parsed = Calls(monkeypatch, storage, "parse_context_state")
    resolved = Calls(monkeypatch, current, "resolve")
    turn(api, conv, "b", "How was your day?", PLAN)
    # The turn after a write reads back the rows it wrote, as they are kept: no resolve.
    assert (parsed.n, resolved.n) == (1, 0)
    quiet = turn(api, conv, "c", "And how was yours?", PLAN)
    assert (parsed.n, resolved.n) == (1, 0)
    body = {
        **quiet["plan"],
        "policy": [
            {k: v for k, v in d.items() if k != "decision_id"} for d in quiet["plan"]["policy"]
        ],
    }
    assert body == uncached(api, quiet["id"])


def test_it_sees_a_write_from_elsewhere_at_once(api, conv):
    """Another process, the admin or psql: the triggers change the version, so the next read
    reads the state again."""
    created = turn(api, conv, "a", "My dog's name is Rex.")
    assert [m["value"] for m in plan_of(api, created["id"])["memories"]] == ["Rex"]
    table = connection.ops.quote_name(MemoryRecord._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET value = 'Max' WHERE user_id = %s", [conv.user_id])
    assert [m["value"] for m in plan_of(api, created["id"])["memories"]] == ["Max"]


def test_it_resolves_again_at_a_time_past_the_window(api, conv):
    """R3: a memory that ends between two plans of one state ends in the second."""
    created = turn(api, conv, "a", "My dog's name is Rex.")
    MemoryRecord.objects.filter(user=conv.user).update(valid_until="2031-01-01T00:00:00Z")
    before = plan_of(api, created["id"], now="2030-06-01T00:00:00Z")
    after = plan_of(api, created["id"], now="2031-06-01T00:00:00Z")
    assert [m["value"] for m in before["memories"]] == ["Rex"] and after["memories"] == []
    assert after == uncached(api, created["id"], now="2031-06-01T00:00:00Z")
    # Back inside the window, the first answer again.
    assert plan_of(api, created["id"], now="2030-06-01T00:00:00Z") == before


def test_it_is_bounded():
    cache = storage.MemoryCache(size=2)
    for user_id in (1, 2, 3):
        cache.put(
            user_id, ["user:x"], storage.CachedMemory(1, storage.ContextState([], [], {}), "")
        )
    assert cache.get(1, ["user:x"]) is None
    assert cache.get(3, ["user:x"]) is not None
