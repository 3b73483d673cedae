"""What a held state is caught up with (memory.triggers, memory.state; docs/DESIGN.md, "Memory
owns the turn's state"): every change of a memory row stamps it with a version above any a
state read before could hold and no higher than the user's version after it; what a stamp
cannot say — a removal — marks the user's version row, and the state is then read whole.
Two workers, each with its own copy, take turns on one conversation and answer what a fresh
read answers (SPEC §7 I7: the same plan and `plan_hash`)."""

import threading

import pytest
from django.db import connection, connections, transaction

from conversations.scopes import Scope
from memory import state, storage
from memory.forgetting import forget_key, tombstone_delete
from memory.models import MemoryRecord, MemorySource, MemoryVersion, SlotRetraction, Tombstone
from memory.services import memory_assert, memory_retract
from tests.factories import (
    CharacterFactory,
    ConversationFactory,
    MessageFactory,
    UserFactory,
)
from tests.helpers import ON_POSTGRES, committed

PLAN = {"budget": 2000, "capabilities": ["tone.playful"]}


def versions(user) -> tuple[int, int]:
    row = MemoryVersion.objects.get(user_id=user.pk)
    return row.version, row.removed_version


@pytest.fixture
def world(db):
    user = UserFactory(username="stamped")
    conversation = ConversationFactory(user=user)
    return user, conversation, MessageFactory(conversation=conversation)


def assert_rex(user, message):
    return memory_assert(
        user=user, key="dog.name", value="Rex", scope=Scope("user"), sources=[str(message.pk)]
    ).record


def test_it_stamps_a_change_above_what_was_held_and_within_the_new_version(world):
    user, _, message = world
    record = assert_rex(user, message)
    first, removed = versions(user)
    stamp = MemoryRecord.objects.get(pk=record.id).changed_version
    assert removed <= stamp <= first  # a fresh version row is read whole by older holders
    MemoryRecord.objects.filter(pk=record.id).update(confidence=0.5)
    second, _ = versions(user)
    assert first < MemoryRecord.objects.get(pk=record.id).changed_version <= second
    tomb = forget_key(user=user, key="cat.name", scope_id="*")
    third, _ = versions(user)
    assert second < Tombstone.objects.get(pk=tomb.pk).changed_version <= third
    memory_retract(record_id=record.id)
    fourth, removed_after = versions(user)
    assert third < max(SlotRetraction.objects.values_list("changed_version", flat=True))
    assert removed_after == removed  # none of these removed anything


def test_it_stamps_a_record_a_source_was_added_to(world):
    user, conversation, message = world
    record = assert_rex(user, message)
    held, removed = versions(user)
    MemorySource.objects.create(
        memory_id=record.id, message=MessageFactory(conversation=conversation)
    )
    after, still = versions(user)
    assert held < MemoryRecord.objects.get(pk=record.id).changed_version <= after
    assert still == removed


@pytest.mark.parametrize(
    "removal",
    ["source dropped", "tombstone undone", "record deleted", "record moved", "retraction edited"],
)
def test_it_marks_a_removal_for_what_a_stamp_cannot_say(world, removal):
    user, conversation, message = world
    record = assert_rex(user, message)
    memory_retract(record_id=record.id)
    tomb = forget_key(user=user, key="cat.name", scope_id="*")
    held, _ = versions(user)
    if removal == "source dropped":
        MemorySource.objects.filter(memory_id=record.id).delete()
    elif removal == "tombstone undone":
        tombstone_delete(tombstone_id=tomb.pk)
    elif removal == "record deleted":
        MemoryRecord.objects.filter(pk=record.id).update(supersedes=None)
        MemoryRecord.objects.filter(pk=record.id).delete()
    elif removal == "record moved":
        MemoryRecord.objects.filter(pk=record.id).update(scope_id=f"character:{user.username}:x")
    else:
        SlotRetraction.objects.filter(user=user).update(retracted_at=record.valid_from)
    version, removed = versions(user)
    assert held < removed <= version


@pytest.fixture
def conv(db):
    user = UserFactory(username="two-workers")
    return ConversationFactory(user=user, character=CharacterFactory(slug="rowan"))


def turn(api, conv, key, content):
    body = {"turn_key": key, "content": content, "plan": PLAN}
    with committed():
        r = api.post(f"/api/v1/conversations/{conv.pk}/turns", body, format="json")
    assert r.status_code == 201, r.json()
    created = r.json()
    for decision in created["plan"]["policy"]:
        decision.pop("decision_id")
    return created


def fresh_plan(api, turn_id):
    """The stored turn planned again from a fresh read (no copy of any worker)."""
    storage.MEMORY_CACHE.clear()
    r = api.get(
        f"/api/v1/turns/{turn_id}/prompt-plan", {"budget": 2000, "capabilities": "tone.playful"}
    )
    assert r.status_code == 200, r.json()
    body = r.json()
    for decision in body["policy"]:
        decision.pop("decision_id")
    return body


def test_it_lets_two_workers_catch_up_with_each_other_and_answer_a_fresh_read(
    api, conv, monkeypatch
):
    """I7, R1–R8: each worker keeps its own copy; a fact the other learnt is caught up (not
    read whole), a forget's undo is read whole; every plan is the fresh one, hash and all."""
    workers = [storage.MemoryCache(8), storage.MemoryCache(8)]
    script = [
        (0, "My dog's name is Rex. I like green tea."),
        (1, "The basil plant is named Harbor."),
        (0, "How was your day?"),
        (1, "Actually, my dog's name is Max."),
        (0, "I like black coffee."),
        ("forget", None),
        (1, "Tell me something."),
        ("undo", None),
        (0, "And now?"),
        (1, "Still there?"),
    ]
    tomb = None
    for n, (who, content) in enumerate(script):
        if who == "forget":
            tomb = forget_key(user=conv.user, key="user.likes", scope_id="*")
            continue
        if who == "undo":
            tombstone_delete(tombstone_id=tomb.pk)
            continue
        monkeypatch.setattr(state, "MEMORY_CACHE", workers[who])
        created = turn(api, conv, f"t{n}", content)
        assert created["plan"] == fresh_plan(api, created["id"])
    # Worker 0 caught up with worker 1's facts at least once, and so did worker 1 with 0's.
    assert workers[0].caught_up >= 1 and workers[1].caught_up >= 1


@pytest.mark.skipif(not ON_POSTGRES, reason="needs PostgreSQL: concurrent transactions")
@pytest.mark.django_db(transaction=True)
def test_it_stamps_a_writer_only_after_the_users_earlier_writer_committed():
    """Sequence values are drawn before commit: a writer first holds the user's version row,
    so one user's stamps follow commit order and a state read at a version holds every change
    stamped at or below it."""
    user = UserFactory(username="ordered")
    holds, release = threading.Event(), threading.Event()
    first: dict = {}

    def earlier_writer():
        try:
            with transaction.atomic():
                first["tomb"] = Tombstone.objects.create(
                    user=user,
                    scope_id="*",
                    key="a.b",
                    forgotten_at="2030-01-01T00:00:00Z",
                    blocks_sources_before="2030-01-01T00:00:00Z",
                )
                holds.set()
                release.wait(60)
        finally:
            connections.close_all()

    thread = threading.Thread(target=earlier_writer, daemon=True)
    thread.start()
    assert holds.wait(60)
    second: dict = {}

    def later_writer():
        try:
            second["tomb"] = Tombstone.objects.create(
                user=user,
                scope_id="*",
                key="c.d",
                forgotten_at="2030-01-01T00:00:00Z",
                blocks_sources_before="2030-01-01T00:00:00Z",
            )
        finally:
            connections.close_all()

    other = threading.Thread(target=later_writer, daemon=True)
    other.start()
    waited = False
    with connection.cursor() as cursor:
        while other.is_alive() and not waited:  # until the later writer waits on the row
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query ILIKE %s",
                ["%memory_tombstone%"],
            )
            waited = cursor.fetchone()[0] > 0
    release.set()
    thread.join(60)
    other.join(60)
    assert waited
    committed_first = Tombstone.objects.get(pk=first["tomb"].pk).changed_version
    later = Tombstone.objects.get(pk=second["tomb"].pk).changed_version
    assert committed_first < later <= versions(user)[0]


def test_it_counts_an_update_of_every_column_but_the_stamp_as_a_change_on_sqlite():
    """The SQLite triggers name the columns whose update stamps a row: all of them."""
    from memory.triggers import SQLITE_CHANGED_COLUMNS

    for model in (MemoryRecord, Tombstone, SlotRetraction):
        columns = {f.column for f in model._meta.concrete_fields} - {"changed_version"}
        assert set(SQLITE_CHANGED_COLUMNS[model._meta.db_table]) == columns


def test_it_leaves_the_next_turn_nothing_to_resolve_after_a_plan_read_between_two(
    api, conv, monkeypatch
):
    """The GET of a plan resolves the same state whole; the turn after it still reuses the
    resolution by groups its process keeps (R3, R5: inside the window)."""
    from memory import current

    created = turn(api, conv, "a", "My dog's name is Rex.")
    fresh = api.get(
        f"/api/v1/turns/{created['id']}/prompt-plan",
        {"budget": 2000, "capabilities": "tone.playful"},
    )
    assert fresh.status_code == 200
    calls = []
    real = current.resolve
    monkeypatch.setattr(current, "resolve", lambda *a, **k: calls.append(1) or real(*a, **k))
    quiet = turn(api, conv, "b", "How was your day?")
    assert calls == []
    assert quiet["plan"] == fresh_plan(api, quiet["id"])


def test_it_catches_a_plan_read_up_with_a_fact_learnt_elsewhere(api, conv):
    """GET /turns/{id}/prompt-plan after another writer's fact reads only the rows changed
    since the state this process holds (caught up, not read whole) and answers what a fresh
    read answers (I7: the same plan and `plan_hash`); the fact is in it (R1–R8)."""
    storage.MEMORY_CACHE.clear()
    # A user's first write starts their version row, which every process reads whole after.
    turn(api, conv, "first", "I like jazz.")
    created = turn(api, conv, "a", "My dog's name is Rex.")
    message = MessageFactory(conversation=conv, seq=50)
    memory_assert(
        user=conv.user,
        key="user.likes",
        value="green tea",
        scope=Scope("user"),
        sources=[str(message.pk)],
    )
    before = storage.MEMORY_CACHE.caught_up
    r = api.get(
        f"/api/v1/turns/{created['id']}/prompt-plan",
        {"budget": 2000, "capabilities": "tone.playful"},
    )
    assert r.status_code == 200, r.json()
    assert storage.MEMORY_CACHE.caught_up == before + 1
    caught = r.json()
    for decision in caught["policy"]:
        decision.pop("decision_id")
    assert "green tea" in [memory["value"] for memory in caught["memories"]]
    assert caught == fresh_plan(api, created["id"])
