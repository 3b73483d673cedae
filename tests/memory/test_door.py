"""One door into memory (docs/DESIGN.md, "One door for every reader"; SPEC §3, §4 W3–W10,
F7.6): the write services, the resolve endpoint and the pages read a context's state through
`memory.state.ContextMemory`, keep it at the version read, and catch it up with what changed
since — and answer exactly what a read with nothing held answers."""

import pytest

from conversations.scopes import Scope
from memory import forgetting, services, storage
from memory.models import MemoryRecord
from memory.selectors.resolution import remembered_now
from memory.state import EVERY_SCOPE, ContextMemory, slots_state
from tests.factories import UserFactory
from tests.helpers import committed

pytestmark = pytest.mark.django_db

USER = Scope("user")


@pytest.fixture
def sam():
    return UserFactory(username="sam-door")


def assert_(user, key, value):
    with committed():
        return services.memory_assert(
            user=user, key=key, value=value, scope=USER, authority="user-confirmed"
        )


def active_values(remembered) -> dict[str, str]:
    return {r.key: r.value for r in remembered.active}


def test_it_keeps_what_a_write_service_read_and_catches_it_up_at_the_next_write(sam):
    """W3–W9 decide against the state of the slot's scope, read through the door: the next
    write of the process reads only the rows changed since (the first write's own)."""
    assert_(sam, "pet.name", "Harbor")
    assert_(sam, "user.likes", "green tea")  # this write's read is kept at its version
    caught_up = storage.MEMORY_CACHE.caught_up
    parsed = []
    real = storage.parse_context_state

    def counted(records, *rest):
        parsed.append(records)
        return real(records, *rest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(storage, "parse_context_state", counted)
        renamed = assert_(sam, "pet.name", "Marlowe")
    assert renamed.outcome == "created" and renamed.record.version == 2  # W8: Harbor's next
    assert storage.MEMORY_CACHE.caught_up == caught_up + 1
    [records] = parsed
    assert '"user.likes"' in records and '"pet.name"' not in records
    held = storage.MEMORY_CACHE.get(sam.pk, ["user:sam-door"])
    assert held is not None and {r.value for r in held.state.records} == {
        "Harbor",
        "green tea",
    }


def test_it_answers_a_slot_exactly_as_a_read_with_nothing_held_does(sam):
    """The door's answer for a write (records of the slot in version order, its key's
    tombstones and retractions, cardinality) is the same from the process's copy and from a
    read with nothing held."""
    assert_(sam, "pet.name", "Harbor")
    assert_(sam, "pet.name", "Marlowe")
    assert_(sam, "user.likes", "green tea")
    slots = [("user:sam-door", "pet.name"), ("user:sam-door", "no.such.key")]
    held = slots_state(sam, slots)
    storage.MEMORY_CACHE.clear()
    fresh = slots_state(sam, slots)
    assert held == fresh
    assert [r.value for r in fresh.records[slots[0]]] == ["Harbor", "Marlowe"]
    assert fresh.records[slots[1]] == ()


def test_it_shows_the_pages_every_scope_through_the_door_and_never_a_forgotten_value(sam):
    """F5, F7.6: the pages' read of every scope is kept like any other; a forget drops it,
    so the next page never shows the forgotten value from a copy."""
    assert_(sam, "family.sister.name", "Priya")
    likes = assert_(sam, "user.likes", "green tea")
    first = remembered_now(sam)
    assert storage.MEMORY_CACHE.get(sam.pk, EVERY_SCOPE) is not None
    assert active_values(first) == {"family.sister.name": "Priya", "user.likes": "green tea"}
    sister = MemoryRecord.objects.get(user=sam, key="family.sister.name")
    with committed():
        forgetting.memory_forget(record_id=sister.pk, user=sam)
    assert storage.MEMORY_CACHE.get(sam.pk, EVERY_SCOPE) is None
    after = remembered_now(sam)
    assert active_values(after) == {"user.likes": "green tea"}
    assert "Priya" not in {r.value for r in after.records}
    storage.MEMORY_CACHE.clear()
    assert active_values(remembered_now(sam)) == active_values(after)
    assert likes.record.id in {r.id for r in after.active}


def test_it_reads_the_same_state_through_the_orm_where_the_raw_reader_does_not_serve(
    sam, monkeypatch
):
    """The door's ORM twin (`read_orm`) answers what its one statement answers."""
    from config import storage as config_storage

    assert_(sam, "pet.name", "Harbor")
    assert_(sam, "user.likes", "green tea")
    raw, _ = ContextMemory(sam, None).read()
    monkeypatch.setattr(config_storage, "_text_sql", lambda alias: None)
    orm, _ = ContextMemory(sam, None).read()
    assert raw.version == orm.version
    assert sorted(raw.state.records, key=lambda r: r.id) == sorted(
        orm.state.records, key=lambda r: r.id
    )
