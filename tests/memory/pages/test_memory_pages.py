"""The memory pages (SPEC §2–§4): what is remembered now, confirm, correct, retract,
forget behind a confirmation page, the history of a slot, and what was forgotten."""

import pytest

from conversations.scopes import Scope
from memory.forgetting import memory_forget
from memory.models import MemoryRecord, Tombstone
from memory.services import memory_assert, memory_correct
from tests.factories import CharacterFactory, ConversationFactory
from tests.helpers import follow_messages, live, text

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# The list


def test_it_shows_what_is_remembered_grouped_by_character(page, say, sam, rowan, conv):
    turn = say("My dog's name is Rex.")
    memory_assert(
        user=sam,
        key="user.preferred_name",
        value="Sammy",
        scope=Scope("character", character=rowan.slug),
        authority="user-confirmed",
    )
    memory_assert(
        user=sam,
        key="story.lantern.status",
        value="unlit",
        confidence=0.6,
        scope=Scope("conversation", conversation=str(conv.pk)),
        sources=[str(turn.user_message_id)],
    )

    r = page.get("/memories/")

    assert r.status_code == 200
    seen = text(r)
    assert (
        seen.index("Everywhere")
        < seen.index("Rex")
        < seen.index("With Captain Rowan")
        < seen.index("Sammy")
    )
    assert "Dog's name" in seen and "Likely" in seen
    assert "with Captain Rowan" in seen and "Confirmed" in seen
    assert "Only in “Rooftop greenhouse” with Captain Rowan" in seen and "Uncertain" in seen
    assert "From your message on" in seen
    anchor = f'href="/conversations/{conv.pk}/#m-{turn.user_message_id}"'
    assert anchor in r.content.decode()


def test_it_tells_when_nothing_is_remembered(page):
    r = page.get("/memories/")
    assert "Nothing is remembered about you yet" in text(r)


def test_it_shows_only_the_current_value_of_a_slot(page, say, sam):
    say("My dog's name is Rex.")
    memory_correct(record_id=live("dog.name", sam).pk, value="Max", user=sam)

    seen = text(page.get("/memories/"))

    assert "Max" in seen and "Rex" not in seen
    assert "You corrected it on" in seen


def test_it_leaves_out_what_another_user_remembers(page, say, alex, alex_conv):
    say("I live in Boston.")
    memory_assert(user=alex, key="user.lives_in", value="Lisbon", scope=Scope("user"))
    seen = text(page.get("/memories/"))
    assert "Boston" in seen and "Lisbon" not in seen


def test_it_filters_by_character(page, say, sam, rowan):
    mira = CharacterFactory(slug="mira", name="Mira")
    ConversationFactory(user=sam, character=mira)
    say("I live in Boston.")
    memory_assert(
        user=sam,
        key="user.preferred_name",
        value="Skipper",
        scope=Scope("character", character=rowan.slug),
    )
    memory_assert(
        user=sam,
        key="user.preferred_name",
        value="Stargazer",
        scope=Scope("character", character="mira"),
    )

    rowan_only = text(page.get("/memories/", {"character": rowan.slug}))
    everywhere_only = text(page.get("/memories/", {"character": "everywhere"}))

    assert "Skipper" in rowan_only and "Boston" in rowan_only and "Stargazer" not in rowan_only
    assert (
        "Boston" in everywhere_only
        and "Skipper" not in everywhere_only
        and "Stargazer" not in everywhere_only
    )


def search(page, term, **filters):
    """Search as the page does (SPEC §12: by POST, the term kept out of every URL)."""
    r = page.post("/memories/filter", {"q": term, **filters})
    assert r.status_code == 302 and term not in r["Location"]
    return page.get(r["Location"])


def test_it_searches_labels_and_values(page, say):
    say("I live in Boston. My dog's name is Rex.")
    by_value = text(search(page, "bost"))
    by_label = text(search(page, "DOG"))
    nothing = text(search(page, "zebra"))
    assert "Boston" in by_value and "Rex" not in by_value
    assert "Rex" in by_label and "Boston" not in by_label
    assert "Nothing matches this search" in nothing


def test_it_says_when_a_filter_cannot_be_used(page, say):
    say("I live in Boston.")
    seen = text(page.get("/memories/", {"character": "nobody-knows"}))
    assert "This filter could not be used" in seen and "Boston" in seen


# ---------------------------------------------------------------------------------------------
# Confirm, correct, retract


def test_it_confirms_a_memory(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)

    r = page.post(f"/memories/{record.pk}/confirm", {"next": "/memories/"}, follow=True)

    assert r.redirect_chain == [(f"/memories/#m-{live('dog.name', sam).pk}", 302)]
    assert live("dog.name", sam).authority == "user-confirmed"
    assert any("Confirmed “Dog's name”" in m for m in follow_messages(r))
    seen = text(r)
    assert (
        "Confirmed" in seen
        and "You confirmed it on" in seen
        and "first from your message on" in seen
    )


def test_it_refuses_to_confirm_a_value_that_is_not_current(page, say, sam):
    say("My dog's name is Rex.")
    old = live("dog.name", sam)
    memory_correct(record_id=old.pk, value="Max", user=sam)

    r = page.post(f"/memories/{old.pk}/confirm", follow=True)

    assert "no longer current" in follow_messages(r)[0]
    assert MemoryRecord.objects.filter(user=sam, authority="user-confirmed").count() == 0


def test_it_corrects_a_memory_inline(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)

    r = page.post(
        f"/memories/{record.pk}/correct",
        {"value": "Max", "next": "/memories/?sort=az"},
        follow=True,
    )

    new = live("dog.name", sam)
    assert r.redirect_chain == [(f"/memories/?sort=az#m-{new.pk}", 302)]
    assert (new.value, new.authority, new.supersedes_id) == ("Max", "user-corrected", record.pk)
    assert "Corrected “Dog's name”" in follow_messages(r)[0]
    assert "Max" in text(r) and "Rex" not in text(r)


def test_it_shows_the_correction_form_on_its_own_page(page, say, sam):
    say("My dog's name is Rex.")
    r = page.get(f"/memories/{live('dog.name', sam).pk}/correct")
    assert r.status_code == 200
    assert '<label for="id_value">New value</label>' in r.content.decode()
    assert 'value="Rex"' in r.content.decode()


@pytest.mark.parametrize("bad", ["", "   ", "x" * 2001, "nul\x00byte"])
def test_it_rerenders_a_bad_correction_with_errors_and_stores_nothing(page, say, sam, bad):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)
    before = MemoryRecord.objects.count()

    r = page.post(f"/memories/{record.pk}/correct", {"value": bad})

    assert r.status_code == 200
    assert r.context["form"].errors["value"]
    assert "Nothing was saved" in text(r)
    assert MemoryRecord.objects.count() == before
    assert live("dog.name", sam).value == "Rex"


def test_it_marks_a_memory_as_no_longer_true(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)

    r = page.post(f"/memories/{record.pk}/retract", follow=True)

    record.refresh_from_db()
    assert record.retracted_at is not None
    assert "no longer treated as true" in follow_messages(r)[0]
    # In the card's place: what it was, that it is no longer true, and an undo; no longer
    # among the memories.
    assert [(row.kind, row.id) for group in r.context["groups"] for row in group["rows"]] == [
        ("retracted", str(record.pk))
    ]
    assert "Rex" not in text(page.get("/memories/"))
    history = text(page.get(f"/memories/{record.pk}/history"))
    assert "Rex" in history and "No longer true" in history


def test_it_accepts_only_post_on_action_urls(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)
    for action in ("confirm", "retract"):
        assert page.get(f"/memories/{record.pk}/{action}").status_code == 405


# ---------------------------------------------------------------------------------------------
# Forget


def test_it_explains_forgetting_before_it_forgets(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)

    r = page.get(f"/memories/{record.pk}/forget", {"next": "/memories/?q=dog"})

    seen = text(r)
    assert r.status_code == 200
    assert "Forget “Dog's name”?" in seen and "Rex" in seen
    assert "The value is erased" in seen
    assert "Old messages will not bring it back" in seen
    assert (
        "Your messages stay in your conversations for you to read, marked as no longer seen by the "
        "companion, until you delete the conversation" in seen
    )
    assert 'name="next" value="/memories/?q=dog"' in r.content.decode()
    assert Tombstone.objects.count() == 0


def test_it_forgets_after_confirmation(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)

    r = page.post(f"/memories/{record.pk}/forget", {"next": "/memories/"}, follow=True)

    record.refresh_from_db()
    assert (record.status, record.value) == ("forgotten", "")
    tombstone = Tombstone.objects.get(user=sam)
    assert (tombstone.key, tombstone.scope_id, tombstone.value_hash) == (
        "dog.name",
        "user:sam",
        None,
    )
    message = follow_messages(r)[0]
    assert "Forgotten: “Dog's name”" in message and "Rex" not in message
    assert "Rex" not in text(r)


def test_it_forgets_everywhere_when_asked(page, say, sam):
    say("My dog's name is Rex.")
    page.post(f"/memories/{live('dog.name', sam).pk}/forget", {"everywhere": "on"})
    assert Tombstone.objects.get(user=sam).scope_id == "*"


def test_it_forgets_one_value_of_a_many_key_or_all_of_them(page, say, sam):
    say("I like jazz.")
    say("I like rainy days.")
    jazz = MemoryRecord.objects.get(user=sam, key="user.likes", value="jazz")

    form = page.get(f"/memories/{jazz.pk}/forget")
    assert "Forget every value of “Likes”" in text(form)
    page.post(f"/memories/{jazz.pk}/forget")

    values = set(
        MemoryRecord.objects.filter(user=sam, key="user.likes").values_list("value", flat=True)
    )
    assert values == {"", "rainy days"}
    assert Tombstone.objects.get(user=sam).value_hash

    rain = MemoryRecord.objects.get(user=sam, key="user.likes", value="rainy days")
    page.post(f"/memories/{rain.pk}/forget", {"whole_key": "on"})
    assert set(
        MemoryRecord.objects.filter(user=sam, key="user.likes").values_list("value", flat=True)
    ) == {""}


def test_it_says_so_when_a_forgotten_memory_is_forgotten_again(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)
    memory_forget(record_id=record.pk, user=sam)

    r = page.get(f"/memories/{record.pk}/forget", follow=True)

    assert r.redirect_chain == [("/memories/forgotten/", 302)]
    assert "already forgotten" in follow_messages(r)[0]
    assert Tombstone.objects.count() == 1


# ---------------------------------------------------------------------------------------------
# History


def test_it_shows_every_value_in_history_with_its_window_and_who_set_it(page, say, sam):
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    memory_correct(record_id=rex.pk, value="Max", user=sam)

    r = page.get(f"/memories/{rex.pk}/history")

    seen = text(r)
    assert r.status_code == 200
    assert "History of “Dog's name”" in seen and "Remembered everywhere" in seen
    rows = r.context["rows"]
    assert [(row.value, row.set_by, row.status) for row in rows] == [
        ("Rex", "a rule that read your message", "replaced"),
        ("Max", "your correction", "remembered now"),
    ]
    assert rows[0].ends == rows[1].starts and rows[1].ends == "still open"
    assert "From your message on" in seen


def test_it_shows_forgotten_values_in_history_without_their_value(page, say, sam):
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    memory_correct(record_id=rex.pk, value="Max", user=sam)
    memory_forget(record_id=live("dog.name", sam).pk, user=sam)

    r = page.get(f"/memories/{rex.pk}/history")

    seen = text(r)
    assert seen.count("Forgotten on") == 2
    assert "Rex" not in seen and "Max" not in seen
    assert [row.value for row in r.context["rows"]] == [None, None]


# ---------------------------------------------------------------------------------------------
# Forgotten


def test_it_lists_the_slot_and_scope_on_the_forgotten_page_never_the_value(page, say, sam, rowan):
    say("My dog's name is Rex.")
    memory_assert(
        user=sam,
        key="user.preferred_name",
        value="Skipper",
        scope=Scope("character", character=rowan.slug),
    )
    memory_forget(record_id=live("dog.name", sam).pk, user=sam, everywhere=True)
    memory_forget(record_id=live("user.preferred_name", sam).pk, user=sam)

    seen = text(page.get("/memories/forgotten/"))

    assert (
        "Dog's name" in seen
        and "In every scope: with every character and in every conversation" in seen
    )
    assert "Preferred name" in seen and "With Captain Rowan" in seen
    assert "Rex" not in seen and "Skipper" not in seen


def test_it_deletes_the_tombstone_when_letting_the_companion_learn_again(page, say, sam):
    say("My dog's name is Rex.")
    memory_forget(record_id=live("dog.name", sam).pk, user=sam)
    tombstone = Tombstone.objects.get(user=sam)

    r = page.post(f"/memories/forgotten/{tombstone.pk}/learn-again", follow=True)

    assert r.redirect_chain == [("/memories/forgotten/#messages", 302)]
    assert not Tombstone.objects.exists()
    assert "may learn “Dog's name” again" in follow_messages(r)[0]
    say("My dog's name is Rex.")
    assert live("dog.name", sam).value == "Rex"


def test_it_says_on_the_forgotten_page_when_nothing_was_forgotten(page):
    assert "You have not asked the companion to forget anything" in text(
        page.get("/memories/forgotten/")
    )


# ---------------------------------------------------------------------------------------------
# Another user's objects


@pytest.fixture
def alex_memory(alex, alex_conv):
    return memory_assert(user=alex, key="dog.name", value="Bolt", scope=Scope("user")).record


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "correct"),
        ("post", "correct"),
        ("post", "confirm"),
        ("post", "retract"),
        ("get", "forget"),
        ("post", "forget"),
        ("get", "history"),
    ],
)
def test_it_does_not_find_another_users_memory(page, alex, alex_memory, method, path):
    data = {"value": "Hacked"} if path == "correct" else {"everywhere": "on"}
    r = getattr(page, method)(
        f"/memories/{alex_memory.id}/{path}", data if method == "post" else None
    )
    assert r.status_code == 404
    record = MemoryRecord.objects.get(pk=alex_memory.id)
    assert (record.value, record.status, record.retracted_at) == ("Bolt", "active", None)
    assert MemoryRecord.objects.count() == 1 and not Tombstone.objects.exists()


def test_it_does_not_find_another_users_tombstone(page, alex, alex_memory):
    tombstone = memory_forget(record_id=alex_memory.id, user=alex)
    r = page.post(f"/memories/forgotten/{tombstone.pk}/learn-again")
    assert r.status_code == 404
    assert Tombstone.objects.filter(pk=tombstone.pk).exists()


def test_it_does_not_find_an_unknown_memory(page):
    assert page.get("/memories/00000000-0000-0000-0000-000000000000/history").status_code == 404
    assert page.get("/memories/not-a-uuid/history").status_code == 404
