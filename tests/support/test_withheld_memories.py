"""SPEC F7.2/F7.3 in support's admin (S1): the forget on the user's behalf says beforehand how
many messages and other memories the companion would stop using, and afterwards how many it
did; the tombstone admin shows both counts of each forget; a memory a forget withholds is
marked "withheld" on the memory pages, its value masked outside a reveal like every value."""

import pytest

from conversations.scopes import Scope
from memory.forgetting import memory_forget
from memory.models import MemoryRecord, Tombstone
from memory.services import memory_assert
from support.models import SupportAction
from tests.support.conftest import VALUE, assert_no_private_text, open_reveal

pytestmark = pytest.mark.django_db

MEMORIES = "/admin/memory/memoryrecord/"
TOMBSTONES = "/admin/memory/tombstone/"
REASON = "Ticket 4711: the user asked us to forget their plant's name."
ROUTINE = f"watering {VALUE} on Sundays"


@pytest.fixture
def routine(world):
    """Another memory of sam that names the plant (the forget of the plant withholds it)."""
    return memory_assert(
        user=world.sam, key="user.routine", value=ROUTINE, scope=Scope("user")
    ).record


def act(client, action, pks, **form):
    data = {"action": action, "_selected_action": [str(pk) for pk in pks]}
    if form:
        data.update({"_apply": "1", **form})
    return client.post(MEMORIES, data)


def test_it_says_before_a_forget_what_the_companion_would_stop_using_s1(world, routine, support):
    """F7.3 (S1): support's forget page shows, for each selected memory, how many messages
    (in its scope · everywhere) and other memories the forget would withhold — the counts
    the forget then makes — and no value."""
    page = act(support, "forget_on_behalf", [world.plant.pk])
    assert page.status_code == 200
    columns = page.context["columns"]
    [row] = page.context["rows"]
    shown = dict(zip(columns, row, strict=True))
    assert_no_private_text(page.content.decode(), "the forget's confirmation page")
    act(support, "forget_on_behalf", [world.plant.pk], reason=REASON)
    tombstone = Tombstone.objects.get(user=world.sam, key="basil_plant.name")
    detail = SupportAction.objects.get(action="forget").detail
    # The plant's source message; the routine (F7.2). A user-scope forget reaches as far as
    # one everywhere.
    assert (detail["withheld_messages"], detail["withheld_memories"]) == (1, 1)
    assert shown["messages withheld (scope · everywhere)"] == "1 · 1"
    assert shown["other memories withheld"] == 1
    assert str(tombstone.memory_withholdings.get().memory_id) == routine.id
    assert VALUE not in str(detail)


def test_it_says_after_a_forget_how_many_messages_and_memories_it_withheld_s1(
    world, routine, support
):
    """F7.2 (S1): the message after the forget counts the messages and the other memories
    the companion no longer uses, never which."""
    done = act(support, "forget_on_behalf", [world.plant.pk], reason=REASON)
    followed = support.get(done.url)
    [message] = [str(m) for m in followed.context["messages"]]
    assert (
        "The companion no longer sees 1 message and no longer uses 1 other memory that held "
        "the forgotten values" in message
    )
    assert VALUE not in message


def test_it_shows_each_forgets_two_counts_in_the_tombstone_admin_s1(world, routine, support):
    """F6 + F7.2 (S1): the tombstone list and change page show how many messages and other
    memories each forget withholds."""
    tombstone = memory_forget(record_id=world.plant.pk, user=world.sam)
    listed = support.get(TOMBSTONES)
    html = listed.content.decode()
    assert "Memories withheld" in html and "Messages withheld" in html
    rows = {str(t.pk): t for t in listed.context["cl"].result_list}
    shown = rows[str(tombstone.pk)]
    assert (shown._withheld, shown._withheld_memories) == (tombstone.withheld_messages, 1)
    assert rows[str(world.tombstone.pk)]._withheld_memories == 0
    change = support.get(f"{TOMBSTONES}{tombstone.pk}/change/")
    fields = {
        f.field["name"]: f.contents()
        for fieldset in change.context["adminform"]
        for line in fieldset
        for f in line
    }
    assert fields["withheld_memories"] == "1"
    assert_no_private_text(html + change.content.decode(), "the tombstone admin")


def test_it_marks_a_withheld_memory_withheld_with_its_value_masked_s1(world, routine, support):
    """F7.2 (S1): on the memory list a withheld memory says "withheld" (others "-"); its change
    page names the forget that withholds it; its value stays masked outside a reveal."""
    tombstone = memory_forget(record_id=world.plant.pk, user=world.sam)
    listed = support.get(MEMORIES)
    model_admin = listed.context["cl"].model_admin
    rows = {str(r.pk): r for r in listed.context["cl"].result_list}
    assert "withheld</span>" in str(model_admin.withheld_ref(rows[routine.id]))
    assert model_admin.withheld_ref(rows[str(world.like.pk)]) == "-"
    change = support.get(f"{MEMORIES}{routine.id}/change/")
    html = change.content.decode()
    assert 'class="memory-withheld"' in html
    assert f"/admin/memory/tombstone/{tombstone.pk}/change/" in html
    assert ROUTINE not in listed.content.decode() and ROUTINE not in html
    assert_no_private_text(listed.content.decode() + html, "the memory admin")


def test_it_shows_a_withheld_memorys_value_only_inside_a_reveal_still_marked_s1(
    world, routine, privileged, privileged_user
):
    """S1: inside a reveal of its user the withheld memory's value shows, still marked
    "withheld" (F7.2: the record stays the user's)."""
    memory_forget(record_id=world.plant.pk, user=world.sam)
    open_reveal(privileged_user, "sam")
    html = privileged.get(f"{MEMORIES}{routine.id}/change/").content.decode()
    assert ROUTINE in html and 'class="memory-withheld"' in html
    assert MemoryRecord.objects.get(pk=routine.id).status == "active"
