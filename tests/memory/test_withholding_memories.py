"""SPEC F7.2: a forget withholds the user's other memories that hold a purged value as whole
words — in their value, their label or their key — learnt at or before the forget and living
in a context the tombstone's scope covers; the links are written in the forget's transaction
by every forget path, and released by undo (F4) where no other tombstone holds them."""

import pytest

from config.clock import db_now
from memory import forgetting
from memory.models import KeyDefinition, MemoryRecord, MemoryVersion, MemoryWithholding, Tombstone
from memory.withholding import (
    memories_released_by,
    memories_withheld_by,
    withheld_memory_counts,
    withheld_memory_lists,
)
from support.services.actions import support_forget
from tests.factories import CharacterFactory, ConversationFactory
from tests.memory.api.calls import assert_memory

pytestmark = pytest.mark.django_db

PAST = "2026-01-01T00:00:00Z"


def remember(api, key, value, **body):
    body.setdefault("valid_from", PAST)
    r = assert_memory(api, key=key, value=value, **body)
    assert r.status_code == 201, r.content
    return r.json()["memory"]["id"]


def forget(api, memory_id, **body):
    r = api.post(f"/api/v1/memories/{memory_id}/forget", body, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def linked(tombstone_id) -> set[str]:
    return {
        str(m)
        for m in MemoryWithholding.objects.filter(tombstone_id=tombstone_id).values_list(
            "memory_id", flat=True
        )
    }


@pytest.fixture
def priya(api, sam):
    """The SPEC's example: the sister's name, where Priya works (found by its key), a routine
    that names her (by its value), and a taste that does not."""
    return {
        "sister": remember(api, "family.sister.name", "Priya"),
        "works": remember(api, "people.priya.works_at", "Globex"),
        "visits": remember(api, "user.routine", "visiting Priya on Sundays"),
        "tea": remember(api, "user.likes", "green tea"),
    }


def test_it_withholds_the_memories_that_name_the_forgotten_value_f7_2(api, sam, priya):
    """F7.2's example: forgetting "Priya" withholds `people.priya.works_at` ("Priya: works
    at") and "visiting Priya on Sundays", not "green tea"; the answer counts them."""
    tombstone = forget(api, priya["sister"])
    assert tombstone["withheld_memories"] == 2
    assert linked(tombstone["id"]) == {priya["works"], priya["visits"]}
    # The records stay the user's, values and all (F7.2: withheld, not purged).
    works = MemoryRecord.objects.get(pk=priya["works"])
    assert (works.status, works.value) == ("active", "Globex")


def test_it_finds_a_memory_by_its_registry_label_f7_2(api, sam):
    """F7.2: the label is the record's display label — the registry's when it has one."""
    KeyDefinition.objects.create(key="user.sister_employer", label="Where Priya works")
    sister = remember(api, "family.sister.name", "Priya")
    employer = remember(api, "user.sister_employer", "Globex")
    plain = remember(api, "user.employer", "Globex")
    tombstone = forget(api, sister)
    assert linked(tombstone["id"]) == {employer} and plain not in linked(tombstone["id"])


def test_it_finds_a_memory_by_its_default_label_and_key_f7_2(api, sam):
    """F7.2: a key the registry does not know is labelled from the key ("Sam Rivera: lives
    in" for `people.sam_rivera.lives_in`), and the key holds the value's slug."""
    name = remember(api, "family.friend.name", "Sam Rivera")
    lives = remember(api, "people.sam_rivera.lives_in", "Porto")
    other = remember(api, "people.sam.lives_in", "Lisbon")
    tombstone = forget(api, name)
    assert linked(tombstone["id"]) == {lives} and other not in linked(tombstone["id"])


def test_it_finds_a_memory_by_its_value_as_whole_words_only_f7_2(api, sam):
    """F7.2: the value holds the purged value as whole words ("Priyanka" is another name)."""
    sister = remember(api, "family.sister.name", "Priya")
    says = remember(api, "user.routine", "tea with PRIYA every Sunday")
    other = remember(api, "user.friend", "Priyanka")
    tombstone = forget(api, sister)
    assert linked(tombstone["id"]) == {says} and other not in linked(tombstone["id"])


def test_it_does_not_link_what_was_learnt_after_the_forget_f7_2(api, sam, priya):
    """F7.2: only evidence at or before `forgotten_at` is withheld."""
    MemoryRecord.objects.filter(pk=priya["visits"]).update(
        evidence_time=db_now().replace(year=2099)
    )
    tombstone = forget(api, priya["sister"])
    assert linked(tombstone["id"]) == {priya["works"]}


def test_it_links_only_records_living_where_the_scope_reaches_f7_2(api, sam, conv):
    """F6's mapping for F7.2: a forget in Rowan's scope reaches the user's records, Rowan's
    and those of conversations with Rowan — not another character's, nor a conversation with
    another character."""
    other = CharacterFactory(slug="other", name="Other")
    elsewhere = ConversationFactory(user=sam, character=other)
    rowan = {"kind": "character", "character": "captain-rowan"}
    sister = remember(api, "family.sister.name", "Priya", scope=rowan)
    mine = remember(api, "user.routine", "visiting Priya on Sundays")
    rowans = remember(api, "people.priya.works_at", "Globex", scope=rowan)
    here = remember(
        api,
        "user.note",
        "Priya called",
        scope={"kind": "conversation", "conversation": str(conv.pk)},
    )
    others = remember(
        api, "people.priya.works_at", "Globex", scope={"kind": "character", "character": "other"}
    )
    there = remember(
        api,
        "user.note",
        "Priya called",
        scope={"kind": "conversation", "conversation": str(elsewhere.pk)},
    )
    tombstone = forget(api, sister)
    assert tombstone["scope_id"] == "character:sam:captain-rowan"
    assert linked(tombstone["id"]) == {mine, rowans, here}
    assert not {others, there} & linked(tombstone["id"])


def test_it_links_from_a_conversation_forget_the_records_its_contexts_see_f7_2(api, sam, conv):
    """F6's mapping for F7.2: a forget in a conversation reaches the user's records, its
    character's and its own."""
    other = CharacterFactory(slug="other", name="Other")
    in_conv = {"kind": "conversation", "conversation": str(conv.pk)}
    sister = remember(api, "family.sister.name", "Priya", scope=in_conv)
    mine = remember(api, "user.routine", "visiting Priya on Sundays")
    rowans = remember(
        api,
        "people.priya.works_at",
        "Globex",
        scope={"kind": "character", "character": "captain-rowan"},
    )
    others = remember(
        api, "people.priya.works_at", "Globex", scope={"kind": "character", "character": other.slug}
    )
    tombstone = forget(api, sister)
    assert linked(tombstone["id"]) == {mine, rowans}
    assert others not in linked(tombstone["id"])


def test_it_links_in_every_forget_path_f7_2(api, sam, priya):
    """F7.2: the bulk "forget selected" and support's forget write the links as the API's
    forget does (all of them go through one forget)."""
    [tombstone] = forgetting.memory_forget_selected(record_ids=[priya["sister"]], user=sam)
    assert linked(tombstone.pk) == {priya["works"], priya["visits"]}
    assert tombstone.withheld_memories == 2


def test_it_links_when_support_forgets_on_the_users_behalf_f7_2(api, sam, priya, django_user_model):
    staff = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    [outcome] = support_forget(staff=staff, record_ids=[priya["sister"]], reason="asked by mail")
    tombstone = Tombstone.objects.get(pk=outcome.detail["tombstone"])
    assert tombstone.forgotten_by == "support"
    assert linked(tombstone.pk) == {priya["works"], priya["visits"]}


def test_it_withholds_nothing_more_when_everything_is_forgotten_f7_2(api, sam, priya):
    """ "Forget everything" purges every record: nothing is left to withhold, and a record an
    earlier forget of the batch linked is unlinked once purged (it holds no value)."""
    tombstones = forgetting.memory_forget_all(user=sam)
    assert len(tombstones) == 4
    assert not MemoryWithholding.objects.filter(tombstone__user=sam).exists()


def test_it_answers_the_selectors_the_pages_and_export_read_f7_2(api, sam, priya):
    """The reads of the links: per record its tombstones (oldest forget first), per tombstone
    its count and its sorted list."""
    first = forget(api, priya["sister"])
    again = remember(api, "family.cousin.name", "Globex")
    second = forget(api, again)
    by = memories_withheld_by(user=sam, memory_ids=[priya["works"], priya["tea"]])
    assert [str(t.pk) for t in by[priya["works"]]] == [first["id"], second["id"]]
    assert priya["tea"] not in by
    counts = withheld_memory_counts([first["id"], second["id"]])
    assert counts == {first["id"]: 2, second["id"]: 1}
    assert withheld_memory_lists(sam) == {
        first["id"]: sorted([priya["works"], priya["visits"]]),
        second["id"]: [priya["works"]],
    }


def test_it_releases_on_undo_only_what_no_other_forget_holds_f4_f7_2(api, sam, priya):
    """F4 + F7.2: deleting a tombstone deletes its links; a record another tombstone also
    withholds stays withheld."""
    first = forget(api, priya["sister"])
    again = remember(api, "family.cousin.name", "Globex")
    second = forget(api, again)
    assert memories_released_by(Tombstone.objects.get(pk=first["id"])) == [priya["visits"]]
    assert api.delete(f"/api/v1/tombstones/{first['id']}").status_code == 204
    assert set(memories_withheld_by(user=sam, memory_ids=list(priya.values()))) == {priya["works"]}
    assert linked(second["id"]) == {priya["works"]}


def test_it_stamps_the_linked_records_so_a_held_state_rereads_them_f7_2(api, sam, priya):
    """A link written or deleted stamps its record (`memory.triggers`): a state held at an
    older version catches the record up with its links."""
    before = MemoryRecord.objects.get(pk=priya["tea"]).changed_version
    held = MemoryVersion.objects.get(user_id=sam.pk).version
    tombstone = forget(api, priya["sister"])
    works = MemoryRecord.objects.get(pk=priya["works"]).changed_version
    assert works > held
    assert MemoryRecord.objects.get(pk=priya["tea"]).changed_version == before
    MemoryWithholding.objects.filter(tombstone_id=tombstone["id"]).delete()
    assert MemoryRecord.objects.get(pk=priya["works"]).changed_version > works


def test_it_previews_the_memories_a_forget_would_withhold_f7_2(api, sam, priya):
    """F7.3's page reads it: before the forget, the remembered records a forget in the
    record's own scope would withhold; nothing is written."""
    preview = forgetting.forget_preview(record_id=priya["sister"], user=sam)
    assert [r.id for r in preview.withheld_memories] == [priya["works"], priya["visits"]]
    assert not MemoryWithholding.objects.exists() and not Tombstone.objects.exists()
