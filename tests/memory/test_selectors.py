"""The raw reader (config.storage.RawReader): the hot-path reads give exactly what the ORM
gives, on the database the suite runs on (SQLite, or PostgreSQL with DATABASE_URL).

SPEC §3 feeds the resolver "all stored records that could match the context" and R7 asks for
the same result from the same stored state: a read path that changed a value, a type, a time
zone or an order would break both. Each test reads one stored state twice, through the raw
reader and through the ORM (the reader switched off), and compares by repr, so types and
tzinfo count too."""

from __future__ import annotations

import pytest

from config import storage
from conversations.scopes import Scope
from conversations.selectors import load_context
from memory import forgetting, services
from memory.models import MemoryRecord
from memory.selectors import records
from tests.factories import MessageFactory, at
from turns.selectors import history_candidates, history_with_contents, message_contents

from .conftest import USER

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(user, conversation):
    """A user's memory with every field in use: all four scope kinds, sources, a correction
    chain, windows, a many key, a value-level and a key-level tombstone, retracted and
    forgotten rows, and statuses written by normalisation."""
    messages = [
        MessageFactory(conversation=conversation, created_at=at(f"2026-08-0{d}T08:30"))
        for d in (1, 2, 3)
    ]
    character = Scope("character", character=conversation.character.slug)
    scene = Scope("scene", conversation=str(conversation.pk), scene="greenhouse")
    rex = services.memory_assert(
        user=user,
        key="pet.name",
        value="Rex",
        scope=USER,
        sources=[str(messages[0].pk)],
        confidence=0.7,
    ).record
    services.memory_assert(
        user=user,
        key="pet.name",
        value="Rexy",
        scope=USER,
        authority="user-corrected",
        valid_from=at("2026-08-04T00:00"),
        supersedes=rex.id,
    )
    services.memory_assert(
        user=user,
        key="dog.name",
        value="Bo",
        scope=character,
        valid_from=at("2026-08-01T00:00"),
        valid_until=at("2026-08-02T12:00"),
        sources=[str(m.pk) for m in messages],
    )
    services.memory_assert(
        user=user,
        key="cat.name",
        value="Mog",
        scope=scene,
        authority="rule-extracted",
        valid_from=at("2026-08-01T00:00:00.123456"),
    )
    services.memory_assert(
        user=user,
        key="mood",
        value="calm",
        scope=Scope("conversation", conversation=str(conversation.pk)),
    )
    for value in ("jazz", "rain", "Tea"):
        services.memory_assert(user=user, key="user.likes", value=value, scope=USER)
    jazz = MemoryRecord.objects.get(user=user, key="user.likes", value="jazz")
    forgetting.memory_forget(record_id=jazz.pk, user=user)
    fish = services.memory_assert(user=user, key="fish.name", value="Nemo", scope=USER).record
    forgetting.memory_forget(record_id=fish.id, user=user, everywhere=True)
    lives = services.memory_assert(
        user=user, key="user.lives_in", value="Lisbon", scope=USER
    ).record
    services.memory_retract(record_id=lives.id, user=user)
    services.memory_normalise(user=user, now=at("2026-09-01T00:00"))
    # §15 M3: a record a connection told (its provenance read by both paths).
    services.memory_assert(
        user=user, key="cat.name", value="Miso", scope=USER, agent=("7", "Desk assistant")
    )
    assert MemoryRecord.objects.filter(user=user).exclude(status="active").count() >= 3
    return user, conversation, messages


@pytest.fixture
def orm(monkeypatch):
    """Run a read through the ORM path instead of the raw reader."""

    def read(fn, *args, **kwargs):
        with monkeypatch.context() as patch:
            patch.setattr(storage, "_text_sql", lambda alias: None)
            assert storage.raw_reader("default") is None
            return fn(*args, **kwargs)

    return read


def context_records(ctx, keys=None) -> list:
    """A context's records as the door reads them, of `keys` (or all), in the model's order."""
    from memory.state import ContextMemory

    held, _ = ContextMemory(ctx.user, ctx.domain.scope_ids()).read()
    found = [r for r in held.state.records if keys is None or r.key in keys]
    return sorted(found, key=lambda r: (r.scope_id, r.key, r.version))


def reprs(items) -> list[str]:
    return [repr(item) for item in items]


def test_it_reads_records_exactly_as_the_orm_does(stored, orm):
    """§1/R7: every field of every record (UUID text, aware UTC datetimes with microseconds,
    nulls, sources, scopes) and the order are the ORM's, for any queryset (one with an order
    or a slice of its own included)."""
    user, _, _ = stored
    assert storage.raw_reader("default") is not None
    for qs in (
        MemoryRecord.objects.filter(user=user),
        MemoryRecord.objects.filter(user=user).exclude(status="forgotten"),
        MemoryRecord.objects.filter(user=user, key="pet.name", scope_id=f"user:{user.username}"),
        MemoryRecord.objects.filter(user=user).order_by("-version", "key"),
        MemoryRecord.objects.filter(user=user)[2:5],
        MemoryRecord.objects.filter(pk__in=[]),
        MemoryRecord.objects.filter(user=user, key="no.such.key"),
    ):
        raw = records.records_to_domain(qs, user.username)
        assert reprs(raw) == reprs(orm(records.records_to_domain, qs, user.username))
    everything = records.records_to_domain(MemoryRecord.objects.filter(user=user), user.username)
    assert len(everything) == MemoryRecord.objects.filter(user=user).count() >= 10
    assert any(r.sources for r in everything) and any(r.supersedes for r in everything)
    assert [r.told_by for r in everything if r.told_by] == [("7", "Desk assistant")]
    assert {r.scope.kind for r in everything} == {"user", "character", "conversation", "scene"}


@pytest.mark.parametrize("keys", [None, ["pet.name", "user.likes"], ["no.such.key"]])
@pytest.mark.parametrize("scene", [None, "greenhouse"])
def test_it_reads_a_contexts_candidates_and_tombstones_exactly_as_the_orm_does(
    stored, orm, keys, scene
):
    """§3 input: the records of a context read through the one door (`memory.state`: every
    record of its scopes, R1), the tombstones, the key registry and the secret are the ORM's
    (the records equal, in the model's order once sorted so)."""
    user, conversation, _ = stored
    ctx = load_context(
        {"user": user.username, "conversation": str(conversation.pk), "scene": scene}
    )
    raw = context_records(ctx, keys)
    assert raw == orm(context_records, ctx, keys)
    assert {r.scope_id for r in raw} <= set(ctx.domain.scope_ids())
    if keys is None:
        assert (
            len(raw)
            == MemoryRecord.objects.filter(user=user, scope_id__in=ctx.domain.scope_ids()).count()
        )
    registry, tombstones, secret = records.registry_tombstones_secret(user, keys)
    orm_registry, orm_tombstones, orm_secret = orm(records.registry_tombstones_secret, user, keys)
    assert reprs(tombstones) == reprs(orm_tombstones)
    assert (registry.cardinality, registry.labels, registry.pinned_keys) == (
        orm_registry.cardinality,
        orm_registry.labels,
        orm_registry.pinned_keys,
    )
    assert secret == orm_secret
    if keys is None:
        assert len(tombstones) == 2 and secret == records.user_secret(user) != b""


def test_it_reads_history_candidates_and_contents_exactly_as_the_orm_does(stored, orm):
    """I1/I3 input: a conversation's earlier messages (id, seq, role, bytes) and the text of
    those chosen are the ORM's, in the same order."""
    _, conversation, messages = stored
    MessageFactory(conversation=conversation, content="ünïcödé ☃ " * 3)
    MessageFactory(conversation=conversation, content="")
    for before in (2, 10**6):
        raw = history_candidates(conversation, before)
        assert reprs(raw) == reprs(orm(history_candidates, conversation, before))
    candidates = history_candidates(conversation, 10**6)
    assert [c.n_bytes for c in candidates][-2:] == [len(("ünïcödé ☃ " * 3).encode()), 0]
    ids = [c.id for c in reversed(candidates)] + [candidates[0].id]
    raw = message_contents(conversation, ids)
    assert list(raw.items()) == list(orm(message_contents, conversation, ids).items())
    assert set(raw) == {c.id for c in candidates}


def test_it_reads_the_plans_history_with_its_text_exactly_as_the_orm_does(
    stored, orm, django_assert_num_queries
):
    """I1/I3/I6 input: the one-query history read gives the ORM's candidates and the ORM's
    text for every message; the newest messages within `room` (and the `n_recent` newest)
    come with that query, so asking for their text reads nothing more."""
    _, conversation, _ = stored
    for content in ("first", "second", "third ünïcödé ☃"):
        MessageFactory(conversation=conversation, content=content)
    for before, room, n_recent in ((10**6, 40, 0), (10**6, 0, 2), (3, 5, 5), (1, 1000, 2)):
        raw, raw_fetch = history_with_contents(conversation, before, room, n_recent)
        orm_candidates, orm_fetch = orm(history_with_contents, conversation, before, room, n_recent)
        assert reprs(raw) == reprs(orm_candidates)
        ids = [c.id for c in raw]
        assert raw_fetch(ids) == orm_fetch(ids)
    candidates, fetch = history_with_contents(conversation, 10**6, 0, 2)
    if storage.raw_reader("default") is not None:
        with django_assert_num_queries(0):
            newest = fetch([c.id for c in candidates[-2:]])
        assert list(newest.values()) == ["second", "third ünïcödé ☃"]


def test_it_reads_the_tombstones_withholding_each_record_exactly_as_the_orm_does_f7_2(stored, orm):
    """F7.2: every read of records — a queryset's, the write path's and the turn's state —
    carries the ids of the tombstones withholding each record, the same through the raw
    reader and the ORM (here a routine two forgets withhold, a note one does)."""
    from memory import storage as memory_storage
    from memory.state import ContextMemory, slots_state

    user, conversation, _ = stored
    here = Scope("conversation", conversation=str(conversation.pk))
    sister = services.memory_assert(user=user, key="family.sister.name", value="Priya", scope=USER)
    routine = services.memory_assert(
        user=user, key="user.routine", value="visiting Priya", scope=USER
    )
    note = services.memory_assert(user=user, key="user.note", value="Priya called", scope=here)
    friend = services.memory_assert(
        user=user, key="family.friend.name", value="visiting", scope=USER
    )
    first = forgetting.memory_forget(record_id=sister.record.id, user=user)
    second = forgetting.memory_forget(record_id=friend.record.id, user=user)
    everything = MemoryRecord.objects.filter(user=user)
    raw = records.records_to_domain(everything, user.username)
    assert reprs(raw) == reprs(orm(records.records_to_domain, everything, user.username))
    withheld = {r.id: r.withheld_by for r in raw if r.withheld_by}
    assert withheld == {
        routine.record.id: tuple(sorted([str(first.pk), str(second.pk)])),
        note.record.id: (str(first.pk),),
    }
    slots = sorted({(r.scope_id, r.key) for r in raw})
    by_raw, by_orm = slots_state(user, slots), orm(slots_state, user, slots)
    # Equal (the state's JSON gives PostgreSQL's 1.0 as 1, as it always has).
    assert {s: list(found) for s, found in by_raw.records.items()} == {
        s: list(found) for s, found in by_orm.records.items()
    }
    assert all(by_raw.records[s] for s in slots)
    scope_ids = load_context(
        {"user": user.username, "conversation": str(conversation.pk)}
    ).domain.scope_ids()
    reader = storage.raw_reader("default")
    parts, params = memory_storage.context_state_parts(reader, user, scope_ids)
    [row] = reader.fetch("SELECT " + ", ".join(parts), params)
    state = memory_storage.parse_context_state(*row[1:4], user.username)
    held = ContextMemory(user, scope_ids)
    held.read_orm()
    by_id = {r.id: r for r in held.at_version(None).state.records}
    # Equal (the state's JSON gives PostgreSQL's 1.0 as 1, as it always has).
    assert sorted(state.records, key=lambda r: r.id) == [by_id[i] for i in sorted(by_id)]
    assert {r.id for r in state.records if r.withheld_by} == set(withheld)
