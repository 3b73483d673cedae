"""SPEC F7.3 and F7.2 on the end user's pages: before a forget — of one memory or of several
chosen at once — the confirmation page says how many messages the companion will stop seeing
and lists each other memory it will stop using, with a way to forget those too; after it, the
memories page and the memory's own page show a withheld memory, value and all, with a notice
that the companion no longer uses it and which forget did it (by that memory's label, never
its value), and an action to forget it as well. No page needs JavaScript: every way on is a
link or a form."""

import html
import re

import pytest
from django.utils import timezone

from config.pages import day
from memory.models import MemoryRecord
from tests.factories import CharacterFactory
from tests.helpers import live, text

pytestmark = pytest.mark.django_db

NOTICE = (
    "Not used The companion no longer uses this: it holds words of “Dog's name”, which you "
    "asked it to forget on {day}. It stays here for you; forget it too if it should go. "
    "Forget it as well"
)


def remember(api, sam, key, value, **scope):
    r = api.post(
        "/api/v1/memories",
        {
            "user": "sam",
            "key": key,
            "value": value,
            "scope": scope or {"kind": "user"},
            "authority": "user-confirmed",
        },
        format="json",
    )
    assert r.status_code == 201, r.content
    return live(key, sam)


@pytest.fixture
def world(api, say, sam):
    """sam's dog Rex (learnt from a message), a friend whose value names Rex, a memory whose
    label names nothing of it, and a message that mentions Rex once more."""
    say("My dog's name is Rex.")
    say("Rex and I walked to the harbour.")
    friend = remember(api, sam, "user.best_friend", "Rex the terrier")
    tea = remember(api, sam, "user.favorite_drink", "green tea")
    return {"dog": live("dog.name", sam), "friend": friend, "tea": tea}


def element(response, element_id: str) -> str:
    """The text of the element with `element_id` (markup dropped, whitespace collapsed)."""
    page = response.content.decode()
    match = re.search(rf'<(\w+)[^>]*id="{re.escape(element_id)}"[^>]*>(.*?)</\1>', page, re.S)
    assert match, f"no #{element_id}"
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", match.group(2)).split()))


def today() -> str:
    """Today as the pages write a day (in the test's time zone)."""
    return day(timezone.now())


def test_it_lists_on_the_forget_page_the_memories_the_companion_will_stop_using(page, world):
    """F7.3: one memory's confirmation page names the other memory that holds the value, with
    its value and a link to forget it too, and leaves out the one that does not."""
    r = page.get(f"/memories/{world['dog'].pk}/forget?next=/memories/")
    assert r.status_code == 200
    assert element(r, "withheld-memories-intro") == (
        "1 other memory holds the words of “Dog's name”. The companion will stop using it too. "
        "It stays on your memories page for you, marked as no longer used; forget it too if "
        "it should go."
    )
    assert element(r, "withheld-memories") == (
        "Your best friend : Rex the terrier — Forget this one too (Your best friend)"
    )
    assert f'href="/memories/{world["friend"].pk}/forget?next=/memories/"' in r.content.decode()
    assert "green tea" not in text(r)
    assert "It will also stop seeing 2 messages" in text(r)


def test_it_says_so_when_a_forget_stops_the_companion_using_no_other_memory(page, world):
    """F7.3: with nothing else holding the words, the page says the rest stays in use."""
    r = page.get(f"/memories/{world['tea'].pk}/forget")
    assert element(r, "withheld-memories-intro") == (
        "No other memory holds the words of “Your favorite drink”: the companion goes on "
        "using the rest of what it remembers."
    )


def test_it_gives_the_bulk_forget_page_a_message_count_and_the_memories_withheld(page, world):
    """F7.3: the "Forget selected…" confirmation says how many distinct messages the
    companion will stop seeing and lists the other memories it will stop using, each with a
    link to forget it, and a form that adds them all to the selection (no script needed)."""
    chosen = [str(world["dog"].pk), str(world["tea"].pk)]
    r = page.post("/memories/forget-selected", {"selected": chosen, "next": "/memories/"})
    assert r.status_code == 200
    assert element(r, "forget-selected-withheld") == (
        "It will also stop seeing 2 messages that mention them or that they were learnt from."
    )
    assert element(r, "withheld-memories") == (
        "Your best friend : Rex the terrier — Forget this one on its own (Your best friend)"
    )
    assert f'href="/memories/{world["friend"].pk}/forget?next=/memories/"' in r.content.decode()
    # The add form posts the chosen memories and the withheld one, without confirming.
    add = re.search(
        r'<form[^>]*id="forget-selected-add".*?</form>', r.content.decode(), re.S
    ).group(0)
    posted = re.findall(r'name="selected" value="([^"]+)"', add)
    assert sorted(posted) == sorted([*chosen, str(world["friend"].pk)])
    assert 'name="confirm"' not in add
    again = page.post("/memories/forget-selected", {"selected": posted, "next": "/memories/"})
    assert again.context["page"].withheld_memories == []
    assert element(again, "withheld-memories-intro") == (
        "No other memory holds the words of what you are forgetting: the companion goes on "
        "using the rest of what it remembers."
    )
    assert "Forget 3 memories?" in text(again)
    assert MemoryRecord.objects.filter(status="forgotten").count() == 0  # nothing happened yet


def test_it_counts_no_message_on_the_bulk_page_when_none_holds_the_words(page, world):
    """F7.3: a bulk forget that withholds nothing says so."""
    r = page.post("/memories/forget-selected", {"selected": [str(world["tea"].pk)]})
    assert element(r, "forget-selected-withheld") == (
        "No message of yours mentions them, so no message is hidden from the companion."
    )


def test_it_shows_a_withheld_memory_with_its_value_and_the_forget_that_did_it(page, world):
    """F7.2: after the forget, the memories page keeps the withheld card with its value, a
    notice naming the forget by its label (never the forgotten value) and a link to forget it
    as well; a memory that is not withheld has no notice."""
    page.post(f"/memories/{world['dog'].pk}/forget", {"next": "/memories/"})
    r = page.get("/memories/")
    friend = world["friend"].pk
    assert element(r, f"withheld-{friend}") == NOTICE.format(day=today()) + (" (Your best friend)")
    card = re.search(rf'<li[^>]*id="m-{friend}".*?</li>', r.content.decode(), re.S).group(0)
    assert "Rex the terrier" in card
    assert f'href="/memories/{friend}/forget?next=%2Fmemories%2F"' in card
    assert f'id="withheld-{world["tea"].pk}"' not in r.content.decode()


def test_it_shows_the_notice_on_the_withheld_memory_s_own_page(page, world):
    """F7.2: the memory's own page (its history) says the companion no longer uses it, which
    forget did it, and links to forgetting it as well."""
    page.post(f"/memories/{world['dog'].pk}/forget", {"next": "/memories/"})
    friend = world["friend"].pk
    r = page.get(f"/memories/{friend}/history")
    assert element(r, f"withheld-{friend}") == NOTICE.format(day=today())
    assert f'href="/memories/{friend}/forget"' in r.content.decode()
    assert "Rex the terrier" in text(r)
    tea = page.get(f"/memories/{world['tea'].pk}/history")
    assert "withheld-" not in tea.content.decode()


def test_it_names_each_forget_that_withholds_a_memory_oldest_first(page, api, sam, world):
    """F7.2: a memory two forgets withhold names both by their labels, oldest forget first,
    and neither forgotten value."""
    town = remember(api, sam, "user.hometown", "Harbourside")
    note = remember(api, sam, "user.note", "Rex loves Harbourside")
    page.post(f"/memories/{world['dog'].pk}/forget", {"next": "/memories/"})
    page.post(f"/memories/{town.pk}/forget", {"next": "/memories/"})
    r = page.get("/memories/")
    assert element(r, f"withheld-{note.pk}") == (
        "Not used The companion no longer uses this: it holds words of “Dog's name”, which you "
        f"asked it to forget on {today()}, and of “Your hometown”, which you asked it to "
        f"forget on {today()}. It stays here for you; forget it too if it should go. "
        "Forget it as well (Your note)"
    )


def test_it_tells_a_narrow_forget_from_one_everywhere(page, api, sam, rowan):
    """F7.3 with F6's scope mapping: forgetting what Rowan alone was told lists the memories
    it withholds in Rowan's contexts (the user's and Rowan's own), counts what a forget
    everywhere would withhold, and keeps another character's memory under "mention it",
    which this forget does not change."""
    CharacterFactory(slug="mira", name="Mira")
    rowan_only = {"kind": "character", "character": rowan.slug}
    pet = remember(api, sam, "cat.name", "Biscuit", **rowan_only)
    shared = remember(api, sam, "user.note", "Biscuit sleeps a lot")
    rowans = remember(api, sam, "user.favorite_drink", "Biscuit tea", **rowan_only)
    miras = remember(api, sam, "user.hometown", "Biscuit Bay", kind="character", character="mira")
    r = page.get(f"/memories/{pet.pk}/forget")
    # By key: user.favorite_drink, then user.note.
    assert [o.id for o in r.context["withheld_memories"]] == [str(rowans.pk), str(shared.pk)]
    assert element(r, "withheld-memories-intro").startswith(
        "2 other memories hold the words of “Cat's name”. The companion will stop using them "
        "too, with Captain Rowan."
    )
    assert element(r, "withheld-memories-everywhere") == (
        "If you forget it everywhere, the companion will stop using 3 other memories that hold "
        "its words, wherever they apply."
    )
    assert [o.id for o in r.context["mentioned"]] == [str(miras.pk)]
    assert "Biscuit Bay" in element(r, "mentioned")
