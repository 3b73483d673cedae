"""The memories page as a user meets it: one certainty vocabulary (P1/P2), labels
that read as words or the registry's sentences, pages of cards, sort and filters, a search kept
out of the URL (SPEC §12), "forget selected" behind one confirmation page, and every action
landing on its card with its message beside it."""

import re

import pytest

from conversations.scopes import Scope
from memory.models import KeyDefinition, MemoryRecord, Tombstone
from memory.services import memory_assert, memory_confirm
from memory.views import PAGE_SIZE
from tests.factories import MessageFactory
from tests.helpers import follow_messages, live, text

pytestmark = pytest.mark.django_db

USER = Scope("user")


def rows(response):
    return [row for group in response.context["groups"] for row in group["rows"]]


def card_html(response, record_id) -> str:
    html = response.content.decode()
    start = html.index(f'id="m-{record_id}"')
    ends = [html.find(marker, start + 1) for marker in ('<li class="card', "</section>")]
    return html[start : min(e for e in ends if e != -1)]


def card_text(response, record_id) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", card_html(response, record_id))).replace(
        "&#x27;", "'"
    )


# ---------------------------------------------------------------------------------------------
# Item 4: one certainty vocabulary, at most one sentence on use in conversations


def test_it_names_a_memory_with_no_source_as_such_and_never_calls_it_likely(page, sam):
    """P1 before P2: a model inference without a source message is `unsupported` — one name
    and one sentence, not "Likely … used as probably true" followed by "Not used"."""
    record = memory_assert(
        user=sam, key="dog.name", value="Rex", scope=USER, confidence=0.95
    ).record

    r = page.get("/memories/")

    card = card_text(r, record.id)
    assert (
        "No source" in card
        and "Not used in conversations: no message of yours backs it up." in card
    )
    assert "Likely" not in card and "probably true" not in card
    assert card.count("used in conversations") + card.count("Used in conversations") == 1


@pytest.mark.parametrize(
    ("authority", "confidence", "name", "sentence"),
    [
        (
            "user-confirmed",
            0.2,
            "Confirmed",
            "Used in conversations as a fact: you said so yourself.",
        ),
        ("rule-extracted", 0.9, "Likely", "Used in conversations as probably true."),
        ("rule-extracted", 0.6, "Uncertain", "Used in conversations as uncertain"),
        (
            "rule-extracted",
            0.3,
            "Low confidence",
            "Not used in conversations: the companion is not sure enough of it.",
        ),
    ],
)
def test_it_gives_each_certainty_one_name_and_one_sentence(
    page, sam, conv, authority, confidence, name, sentence
):
    """P2 with the thresholds in settings: confirmed, likely (≥ 0.85), uncertain (≥ 0.5),
    low-confidence (excluded). "Unsure" no longer names anything."""
    message = MessageFactory(conversation=conv)
    record = memory_assert(
        user=sam,
        key="dog.name",
        value="Rex",
        scope=USER,
        authority=authority,
        confidence=confidence,
        sources=[str(message.pk)],
    ).record

    card = card_text(page.get("/memories/"), record.id)

    assert name in card and sentence in card
    assert "Unsure" not in card
    assert card.count("sed in conversations") == 1


# ---------------------------------------------------------------------------------------------
# Item 13: labels never read like field names; sentences from the registry


def test_it_words_an_unregistered_key_instead_of_showing_a_field_name(page, sam, conv):
    message = MessageFactory(conversation=conv)
    memory_assert(
        user=sam, key="story.letter.outcome", value="unsent", scope=USER, sources=[str(message.pk)]
    )
    memory_assert(
        user=sam, key="people.priya.works_at", value="Acme", scope=USER, sources=[str(message.pk)]
    )
    memory_assert(
        user=sam, key="user.favourite_tea", value="Assam", scope=USER, sources=[str(message.pk)]
    )

    seen = text(page.get("/memories/"))

    assert (
        "The story letter's outcome" in seen
        and "Where Priya works" in seen
        and "Your favourite tea" in seen
    )
    assert "Story letter: outcome" not in seen and "Priya: works at" not in seen
    assert not re.search(r"\b\w+: [a-z ]+\b unsent", seen)


def test_it_makes_a_sentence_of_a_memory_from_its_registry_template(page, say, sam):
    say("The basil plant is named Harbor.")
    record = live("basil_plant.name", sam)

    r = page.get("/memories/")

    assert "Your basil plant is called Harbor" in card_text(r, record.pk)
    assert '<span class="memory-value">Harbor</span>' in card_html(r, record.pk)


def test_it_uses_an_edited_template_and_keeps_the_value_escaped(page, sam, conv):
    KeyDefinition.objects.create(
        key="boat.name",
        cardinality="one",
        label="Boat's name",
        template="Your boat is called {value}, ahoy",
    )
    message = MessageFactory(conversation=conv)
    record = memory_assert(
        user=sam, key="boat.name", value="<b>Wave</b>", scope=USER, sources=[str(message.pk)]
    ).record

    r = page.get("/memories/")

    assert "Your boat is called &lt;b&gt;Wave&lt;/b&gt;, ahoy" in card_html(r, record.id).replace(
        '<span class="memory-value">', ""
    ).replace("</span>", "")
    assert "<b>Wave</b>" not in r.content.decode()


def test_it_lets_the_admin_refuse_a_template_without_exactly_one_value(admin_client):
    r = admin_client.post(
        "/admin/memory/keydefinition/add/",
        {
            "key": "boat.name",
            "cardinality": "one",
            "label": "Boat's name",
            "template": "Your boat {value} {value}",
        },
    )
    assert r.status_code == 200 and "{value}" in r.content.decode()
    assert not KeyDefinition.objects.filter(key="boat.name").exists()
    ok = admin_client.post(
        "/admin/memory/keydefinition/add/",
        {
            "key": "boat.name",
            "cardinality": "one",
            "label": "Boat's name",
            "template": "Your boat is called {value}",
        },
    )
    assert ok.status_code == 302
    assert KeyDefinition.objects.get(key="boat.name").template == "Your boat is called {value}"


# ---------------------------------------------------------------------------------------------
# Item 7: pagination, sort, filter by certainty, forget selected


def many(sam, conv, n, *, confidence=0.9):
    message = MessageFactory(conversation=conv)
    return [
        memory_assert(
            user=sam,
            key=f"fact.n{i:03d}",
            value=f"value {i:03d}",
            scope=USER,
            confidence=confidence,
            sources=[str(message.pk)],
        ).record
        for i in range(n)
    ]


def test_it_shows_the_memories_a_page_at_a_time(page, sam, conv):
    made = many(sam, conv, PAGE_SIZE + 3)

    first = page.get("/memories/", {"sort": "az"})
    second = page.get("/memories/", {"sort": "az", "page": 2})

    assert len(rows(first)) == PAGE_SIZE and len(rows(second)) == 3
    assert [r.id for r in rows(first) + rows(second)] == [r.id for r in made]
    html = first.content.decode()
    assert 'aria-label="Pages of memories"' in html and 'id="page-next"' in html
    assert 'href="?sort=az&amp;page=2"' in html
    assert "Page 2 of 2" in text(second)


def test_it_sorts_newest_first_by_default_and_a_to_z_on_request(page, sam, conv):
    message = MessageFactory(conversation=conv)
    for key, value in (("user.lives_in", "Boston"), ("dog.name", "Rex"), ("cat.name", "Tom")):
        memory_assert(user=sam, key=key, value=value, scope=USER, sources=[str(message.pk)])

    newest = [r.key for r in rows(page.get("/memories/"))]
    az = [r.label for r in rows(page.get("/memories/", {"sort": "az"}))]

    assert newest == ["cat.name", "dog.name", "user.lives_in"]
    assert az == ["Cat's name", "Dog's name", "Lives in"]


def test_it_filters_by_certainty(page, sam, conv):
    message = MessageFactory(conversation=conv)
    memory_assert(
        user=sam,
        key="dog.name",
        value="Rex",
        scope=USER,
        confidence=0.95,
        sources=[str(message.pk)],
    )
    memory_assert(
        user=sam, key="cat.name", value="Tom", scope=USER, confidence=0.6, sources=[str(message.pk)]
    )
    memory_assert(user=sam, key="user.lives_in", value="Boston", scope=USER)

    assert [r.key for r in rows(page.get("/memories/", {"certainty": "uncertain"}))] == ["cat.name"]
    assert [r.key for r in rows(page.get("/memories/", {"certainty": "likely"}))] == ["dog.name"]
    assert [r.key for r in rows(page.get("/memories/", {"certainty": "unsupported"}))] == [
        "user.lives_in"
    ]


def test_it_lists_what_forget_selected_will_forget_before_forgetting(page, say, sam):
    say("My dog's name is Rex. I live in Boston.")
    say("I like jazz.")
    rex, boston = live("dog.name", sam), live("user.lives_in", sam)

    r = page.post(
        "/memories/forget-selected",
        {"selected": [str(rex.pk), str(boston.pk), "not-an-id"], "next": "/memories/?sort=az"},
    )

    assert r.status_code == 200
    seen = text(r)
    assert "Forget 2 memories?" in seen
    assert "Your dog is called Rex" in seen and "You live in Boston" in seen and "jazz" not in seen
    assert "1 of what you chose is no longer remembered" in seen
    assert not Tombstone.objects.exists()

    done = page.post(
        "/memories/forget-selected",
        {"selected": [str(rex.pk), str(boston.pk)], "confirm": "1", "next": "/memories/?sort=az"},
        follow=True,
    )

    assert done.redirect_chain == [("/memories/?sort=az#messages", 302)]
    assert Tombstone.objects.filter(user=sam).count() == 2
    assert set(
        MemoryRecord.objects.filter(pk__in=[rex.pk, boston.pk]).values_list("value", flat=True)
    ) == {""}
    message = follow_messages(done)[0]
    assert "Forgotten: 2 memories (“Dog's name”, “Lives in”)" in message and "Rex" not in message
    assert 'id="messages" tabindex="-1"' in done.content.decode()
    assert "jazz" in text(done)


def test_it_forgets_nothing_when_forget_selected_has_nothing_chosen(page, say, sam, alex):
    say("My dog's name is Rex.")
    theirs = memory_assert(user=alex, key="dog.name", value="Bolt", scope=USER).record

    r = page.post(
        "/memories/forget-selected", {"selected": [str(theirs.id)], "confirm": "1"}, follow=True
    )

    assert "Nothing was forgotten" in follow_messages(r)[0]
    assert not Tombstone.objects.exists()
    assert MemoryRecord.objects.get(pk=theirs.id).value == "Bolt"


def test_it_gives_every_card_a_checkbox_for_forget_selected_without_scripts(page, say, sam):
    say("My dog's name is Rex.")
    rex = live("dog.name", sam)
    html = page.get("/memories/").content.decode()
    assert (
        f'<input type="checkbox" name="selected" value="{rex.pk}" form="forget-selected" '
        f'id="select-{rex.pk}">' in html
    )
    assert '<form id="forget-selected" method="post" action="/memories/forget-selected">' in html
    assert (
        'form="forget-selected" class="button-danger" id="forget-selected-button">Forget selected…'
        in html
    )


# ---------------------------------------------------------------------------------------------
# Item 14: the search term never goes into a URL


def test_it_keeps_the_search_term_out_of_every_url(page, say):
    say("I live in Boston. My dog's name is Rex.")

    r = page.post("/memories/filter", {"q": "boston", "sort": "az", "certainty": ""})

    assert r["Location"] == "/memories/?sort=az"
    listed = page.get(r["Location"])
    assert [row.key for row in rows(listed)] == ["user.lives_in"]
    html = listed.content.decode()
    assert not re.search(r'(href|action)="[^"]*boston', html, re.I)
    assert '<form method="post" action="/memories/filter"' in html
    assert 'value="boston"' in html  # kept in the field, from the session
    # A term in the address is ignored: the page never reads `q` from a URL.
    page.post("/memories/filter", {"reset": "1"})
    assert {row.key for row in rows(page.get("/memories/?q=boston"))} == {
        "user.lives_in",
        "dog.name",
    }


def test_it_shows_everything_again_when_the_search_is_cleared(page, say):
    say("I live in Boston. My dog's name is Rex.")
    page.post("/memories/filter", {"q": "boston"})
    page.post("/memories/filter", {"q": "boston", "clear": "1"})
    assert len(rows(page.get("/memories/"))) == 2


def test_it_refuses_an_over_long_search_without_an_error(page, say):
    say("I live in Boston.")
    r = page.post("/memories/filter", {"q": "x" * 201}, follow=True)
    assert r.status_code == 200 and "at most 200 characters" in text(r)
    assert len(rows(r)) == 1


# ---------------------------------------------------------------------------------------------
# Item 8: every action lands on its card, message beside it


def test_it_lands_a_confirm_on_the_new_card_with_the_message_beside_it(page, say, sam):
    say("My dog's name is Rex.")
    old = live("dog.name", sam)

    r = page.post(f"/memories/{old.pk}/confirm", {"next": "/memories/"}, follow=True)

    new = live("dog.name", sam)
    assert r.redirect_chain == [(f"/memories/#m-{new.pk}", 302)]
    card = card_html(r, new.pk)
    assert 'tabindex="-1"' in card.split(">", 1)[0]
    assert "card-notice" in card and "Confirmed “Dog&#x27;s name”" in card
    assert 'id="messages"' not in r.content.decode()  # not at the top as well


def test_it_brings_an_action_on_a_later_page_back_to_the_page_holding_the_card(page, sam, conv):
    made = many(sam, conv, PAGE_SIZE + 2)
    last = made[-1]

    r = page.post(
        f"/memories/{last.id}/confirm", {"next": "/memories/?sort=az&page=2"}, follow=True
    )

    new = live(last.key, sam)
    assert r.redirect_chain == [(f"/memories/?sort=az&page=2#m-{new.pk}", 302)]
    assert r.context["page"].number == 2 and str(new.pk) in [row.id for row in rows(r)]
    # Newest first, the confirmed card moves to the first page: the page that holds it is shown.
    r = page.post(f"/memories/{made[0].id}/confirm", {"next": "/memories/?page=2"}, follow=True)
    confirmed = live(made[0].key, sam)
    assert r.context["page"].number == 1 and str(confirmed.pk) == rows(r)[0].id


def test_it_leaves_an_undo_in_the_cards_place_after_no_longer_true(page, say, sam):
    say("My dog's name is Rex.")
    record = live("dog.name", sam)

    r = page.post(f"/memories/{record.pk}/retract", {"next": "/memories/"}, follow=True)

    assert r.redirect_chain == [(f"/memories/#m-{record.pk}", 302)]
    card = card_html(r, record.pk)
    assert "no longer treated as true" in card and f'action="/memories/{record.pk}/restore"' in card
    assert "Undo: it is true" in card

    undone = page.post(f"/memories/{record.pk}/restore", {"next": "/memories/"}, follow=True)

    new = MemoryRecord.objects.filter(user=sam, key="dog.name").order_by("-version").first()
    assert (new.value, new.authority, new.valid_until) == ("Rex", "user-confirmed", None)
    assert undone.redirect_chain == [(f"/memories/#m-{new.pk}", 302)]
    assert "remembered again" in card_text(undone, new.pk)


def test_it_lands_a_forget_where_the_card_was(page, say, sam):
    say("My dog's name is Rex. I live in Boston.")
    record = live("dog.name", sam)

    r = page.post(f"/memories/{record.pk}/forget", {"next": "/memories/"}, follow=True)

    assert r.redirect_chain == [(f"/memories/#m-{record.pk}", 302)]
    card = card_text(r, record.pk)
    assert "Forgotten: “Dog's name”" in card and "Rex" not in r.content.decode()
    assert sorted(row.kind for row in rows(r)) == ["forgotten", "memory"]


def test_it_says_nothing_changed_or_confirmed_for_a_correction_to_the_same_value(page, say, sam):
    """§2 on the page: the same value is a confirm, never "the old value will not be used
    again"; for the user's own word nothing is stored and the page says so."""
    say("My dog's name is Rex.")
    record = live("dog.name", sam)

    first = page.post(
        f"/memories/{record.pk}/correct", {"value": " rex", "next": "/memories/"}, follow=True
    )

    confirmed = live("dog.name", sam)
    assert (confirmed.value, confirmed.authority) == ("Rex", "user-confirmed")
    assert "Confirmed “Dog's name”" in follow_messages(first)[0]
    assert "will not be used again" not in text(first)
    before = MemoryRecord.objects.count()

    second = page.post(
        f"/memories/{confirmed.pk}/correct", {"value": "Rex", "next": "/memories/"}, follow=True
    )
    again = page.post(f"/memories/{confirmed.pk}/confirm", {"next": "/memories/"}, follow=True)

    assert MemoryRecord.objects.count() == before
    assert (
        "Nothing changed" in follow_messages(second)[0]
        and "Nothing changed" in follow_messages(again)[0]
    )
    assert second.redirect_chain == [(f"/memories/#m-{confirmed.pk}", 302)]


def test_it_says_nothing_changed_when_a_page_shown_earlier_confirms_again(page, say, sam):
    """SPEC §2 on the page: a "Confirm" posted from a page shown before the memory was
    confirmed (another tab, the back button, a second click) confirms what the user already
    confirmed: nothing is stored, and the page says "nothing changed" beside the confirmed
    card — not that the memory is "no longer current", at the top of the page."""
    say("My dog's name is Rex.")
    shown = live("dog.name", sam)
    confirmed = memory_confirm(record_id=shown.pk, user=sam).record
    before = MemoryRecord.objects.count()

    r = page.post(f"/memories/{shown.pk}/confirm", {"next": "/memories/"}, follow=True)

    assert MemoryRecord.objects.count() == before
    assert r.redirect_chain == [(f"/memories/#m-{confirmed.id}", 302)]
    assert "Nothing changed: “Dog's name” was already confirmed by you." in card_text(
        r, confirmed.id
    )
    assert 'id="messages"' not in r.content.decode()


def test_it_says_nothing_changed_when_a_page_shown_earlier_corrects_to_the_same_value(
    page, say, sam
):
    """SPEC §2: a same-value correct is a confirm, so the same holds for "Save correction"
    with the value unchanged on a card confirmed since; a different value still says the
    memory changed in the meantime, and nothing is stored either way."""
    say("My dog's name is Rex.")
    shown = live("dog.name", sam)
    confirmed = memory_confirm(record_id=shown.pk, user=sam).record
    before = MemoryRecord.objects.count()

    same = page.post(
        f"/memories/{shown.pk}/correct", {"value": "REX ", "next": "/memories/"}, follow=True
    )
    other = page.post(
        f"/memories/{shown.pk}/correct", {"value": "Max", "next": "/memories/"}, follow=True
    )

    assert MemoryRecord.objects.count() == before
    assert same.redirect_chain == [(f"/memories/#m-{confirmed.id}", 302)]
    assert "Nothing changed: “Dog's name” already holds that value, as you said it." in card_text(
        same, confirmed.id
    )
    assert other.redirect_chain == [("/memories/#messages", 302)]
    assert "changed in the meantime, so nothing was corrected" in follow_messages(other)[0]


def test_it_links_to_what_was_marked_no_longer_true(page, say, sam):
    say("My dog's name is Rex.")
    page.post(f"/memories/{live('dog.name', sam).pk}/retract")
    html = page.get("/memories/").content.decode()
    assert 'id="no-longer-true-link" href="/memories/no-longer-true/"' in html
    assert "1 thing you marked no longer true" in text(page.get("/memories/"))


def test_it_still_says_where_confirmations_without_sources_came_from(page, say, sam):
    say("My dog's name is Rex.")
    memory_confirm(record_id=live("dog.name", sam).pk, user=sam)
    assert "first from your message on" in text(page.get("/memories/"))
