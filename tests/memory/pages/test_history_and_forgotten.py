"""History, "no longer true" and the forgotten page: a
confirmation is shown as "You confirmed it on …", never as a replacement; an undone "no longer
true" shows its gap; a forgotten value never reads "still open"; forgets made by support say
so, without the staff member's reason."""

import re
from datetime import timedelta

import pytest

from memory.forgetting import memory_forget
from memory.models import MemoryRecord, Tombstone
from memory.services import memory_confirm, memory_correct, memory_restore, memory_retract
from support.services import support_forget
from tests.helpers import live, text

pytestmark = pytest.mark.django_db


def history(page, record):
    return page.get(f"/memories/{record.pk}/history")


def test_it_shows_a_confirmation_in_history_as_confirming_not_replacing(page, say, sam):
    """§2: confirm writes a user-confirmed record superseding the old one; history shows one
    value, "You confirmed it on …", and no "Replaced"."""
    say("I dislike being rushed.")
    record = live("user.dislikes", sam)
    memory_confirm(record_id=record.pk, user=sam)

    r = history(page, record)

    seen = text(r)
    assert [(row.value, row.status) for row in r.context["rows"]] == [
        ("being rushed", "remembered now")
    ]
    assert "You confirmed it on" in seen and "Replaced" not in seen
    assert "From your message on" in seen  # the value's own source stays with it
    assert r.context["rows"][0].set_by == "a rule that read your message"


def test_it_shows_a_same_value_correction_in_history_as_a_confirmation(page, say, sam):
    """A `user-corrected` record of the same value (stored before §2 made that a confirm) is
    shown as a confirmation too."""
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    MemoryRecord.objects.create(
        user=sam,
        key="dog.name",
        value="rex",
        scope_kind="user",
        scope_id=rex.scope_id,
        authority="user-corrected",
        valid_from=rex.valid_from + timedelta(microseconds=1),
        recorded_at=rex.recorded_at,
        evidence_time=rex.evidence_time,
        supersedes=rex,
        version=2,
    )

    r = history(page, rex)

    assert [row.status for row in r.context["rows"]] == ["remembered now"]
    assert "Replaced" not in text(r) and "You confirmed it on" in text(r)


def test_it_shows_a_confirmed_value_then_corrected_as_replaced_once(page, say, sam):
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    confirmed = memory_confirm(record_id=rex.pk, user=sam).record
    memory_correct(record_id=confirmed.id, value="Max", user=sam)

    rows = history(page, rex).context["rows"]

    assert [(row.value, row.status, bool(row.confirmed_on)) for row in rows] == [
        ("Rex", "replaced", True),
        ("Max", "remembered now", False),
    ]


def test_it_never_says_still_open_in_history_after_a_forget(page, say, sam):
    """Item 6: a forgotten value ends when it was forgotten."""
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    memory_forget(record_id=rex.pk, user=sam)

    r = history(page, rex)

    (row,) = r.context["rows"]
    assert row.value is None and row.status == "forgotten"
    assert row.ends != "still open" and "still open" not in text(r)
    assert re.fullmatch(r"\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d", row.ends)


def test_it_shows_the_gap_of_an_undone_no_longer_true_in_history(page, say, sam):
    """W10 then the undo: the old value ends at the retraction, the restored one starts at
    the undo, and the time between is a row of its own."""
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    retracted = memory_retract(record_id=rex.pk, user=sam)
    memory_restore(record_id=rex.pk, user=sam)

    r = history(page, rex)

    rows = r.context["rows"]
    assert [(row.value, row.status) for row in rows] == [
        ("Rex", "no longer true"),
        (None, ""),
        ("Rex", "remembered now"),
    ]
    assert (
        rows[1].gap.startswith("Nothing remembered from") and "marked no longer true" in rows[1].gap
    )
    assert rows[0].ends == rows[1].starts and rows[1].ends == rows[2].starts
    assert retracted.retracted_at is not None
    assert 'class="gap"' in r.content.decode()


def test_it_lets_history_rows_stack_on_a_phone(page, say, sam):
    """Item 10: each cell names its column (`data-label`) so narrow screens can stack rows."""
    say("My dog's name is Rex.")
    html = history(page, live("dog.name", sam)).content.decode()
    for column in ("Value", "From", "Until", "Set by", "Now"):
        assert f'data-label="{column}"' in html
    assert 'class="history stackable"' in html


# ---------------------------------------------------------------------------------------------
# Item 3: what was marked no longer true, and its undo


def test_it_lists_what_was_retracted_with_an_undo_on_the_no_longer_true_page(page, say, sam):
    say("My dog's name is Rex. I live in Boston.")
    say("I like jazz.")
    rex, jazz = live("dog.name", sam), live("user.likes", sam)
    memory_retract(record_id=rex.pk, user=sam)
    memory_retract(record_id=jazz.pk, user=sam)

    r = page.get("/memories/no-longer-true/")

    seen = text(r)
    assert "Your dog is called Rex" in seen and "You like jazz" in seen and "Boston" not in seen
    assert "marked no longer true on" in seen
    html = r.content.decode()
    assert f'id="m-{rex.pk}"' in html and f'action="/memories/{rex.pk}/restore"' in html

    done = page.post(f"/memories/{rex.pk}/restore", {"next": "/memories/"}, follow=True)

    assert "remembered again" in text(done)
    assert "Rex" not in text(page.get("/memories/no-longer-true/"))
    assert "You like jazz" in text(page.get("/memories/no-longer-true/"))


def test_it_does_not_list_a_slot_that_holds_a_new_value_as_no_longer_true(page, say, sam):
    say("My dog's name is Rex.")
    memory_retract(record_id=live("dog.name", sam).pk, user=sam)
    say("My dog's name is Max.")
    assert "Nothing is marked no longer true" in text(page.get("/memories/no-longer-true/"))


def test_it_does_not_list_a_many_key_correction_as_no_longer_true(page, say, sam):
    """Correcting one value of a `many` key retracts the old value slot (§2): a correction,
    not something the user marked no longer true."""
    say("I like jazz.")
    memory_correct(record_id=live("user.likes", sam).pk, value="blues", user=sam)
    assert "Nothing is marked no longer true" in text(page.get("/memories/no-longer-true/"))


def test_it_says_so_when_an_undo_is_no_longer_possible(page, say, sam):
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    memory_retract(record_id=rex.pk, user=sam)
    say("My dog's name is Max.")
    before = MemoryRecord.objects.count()

    r = page.post(f"/memories/{rex.pk}/restore", follow=True)

    assert "Nothing to undo" in text(r)
    assert MemoryRecord.objects.count() == before


def test_it_does_not_restore_another_users_memory(page, alex):
    from conversations.scopes import Scope
    from memory.services import memory_assert

    theirs = memory_assert(user=alex, key="dog.name", value="Bolt", scope=Scope("user")).record
    memory_retract(record_id=theirs.id, user=alex)
    assert page.post(f"/memories/{theirs.id}/restore").status_code == 404
    assert MemoryRecord.objects.filter(user=alex).count() == 1


# ---------------------------------------------------------------------------------------------
# Item 12: forgets made by support


def test_it_says_a_forget_was_by_support_without_the_staff_reason(
    page, say, sam, django_user_model
):
    say("My dog's name is Rex. I live in Boston.")
    staff = django_user_model.objects.create(username="agent", is_staff=True)
    support_forget(
        staff=staff, record_ids=[live("dog.name", sam).pk], reason="ticket 4411: asked by phone"
    )
    memory_forget(record_id=live("user.lives_in", sam).pk, user=sam)

    seen = text(page.get("/memories/forgotten/"))

    assert "Dog's name" in seen and "forgotten by support on your behalf on" in seen
    assert seen.count("forgotten by support on your behalf") == 1
    assert (
        "Lives in What applies everywhere; not what one character or conversation alone was told · "
        "forgotten on" in seen
    )
    assert "ticket" not in seen and "4411" not in seen and "phone" not in seen
    assert dict(Tombstone.objects.values_list("key", "forgotten_by")) == {
        "dog.name": "support",
        "user.lives_in": "user",
    }
