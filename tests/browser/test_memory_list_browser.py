"""The memories page with many cards, in Debian's Chromium against the server `make run` starts
(see conftest.py), at 1280 and 390 px, with `look()` on every page visited: 25 cards a page,
newest first or A–Z, filtered by certainty, and a search whose term never goes into an
address (SPEC §12); a word longer than a phone is wide stays inside the window."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from .helpers import (
    card,
    card_labels,
    lands_on_card,
    resolve,
    tell,
)

FRUITS = [
    "apricot",
    "banana",
    "cherry",
    "damson",
    "elderberry",
    "fig",
    "grape",
    "huckleberry",
    "kiwi",
    "lemon",
    "lime",
    "lychee",
    "mango",
    "melon",
    "nectarine",
    "olive",
    "orange",
    "papaya",
    "peach",
    "pear",
    "plum",
    "quince",
    "raspberry",
    "rhubarb",
    "satsuma",
    "tangerine",
    "ugli",
    "vanilla",
    "watermelon",
    "yuzu",
]


# What each of the 30 memories is, in the order they are made: (authority, confidence, with a
# source).
KINDS = (
    [("user-confirmed", 1.0, False)] * 10
    + [("rule-extracted", 0.9, True)] * 10
    + [("rule-extracted", 0.6, True)] * 6
    + [("model-inferred", 0.3, True)] * 2
    + [("model-inferred", 0.9, False)] * 2
)


def label_of(fruit: str) -> str:
    return f"Your favourite {fruit}"


def test_it_shows_many_memories_a_page_at_a_time_in_order_by_certainty_and_search(
    page, readme_server, person, sign_in, look
):
    """25 cards a page, newest first or A–Z (within "everywhere" and each character), filtered
    by certainty (P1/P2's words); an action on page 2 keeps the page; a search's term is
    posted and never appears in an address (SPEC §12)."""
    source = tell(readme_server, person, "Hello there.")["message"]
    sign_in(page, person)
    demo = card_labels(page)
    for fruit, (authority, confidence, sourced) in zip(FRUITS, KINDS, strict=True):
        made = readme_server.api(
            "POST",
            "/memories",
            {
                "user": person.username,
                "key": f"user.favourite_{fruit}",
                "value": f"{fruit} in summer",
                "scope": {"kind": "user"},
                "authority": authority,
                "confidence": confidence,
                "sources": [source] if sourced else [],
            },
        )
        assert made["outcome"] == "created"
    total = len(demo) + len(FRUITS)
    everywhere = ["Basil plant's name", "Dislikes"]
    assert [label for label in demo if label in everywhere] == ["Basil plant's name", "Dislikes"]

    # Newest first: the 30 new ones lead the "everywhere" group, the newest first.
    page.goto(readme_server.url + "/memories/")
    nav = page.get_by_role("navigation", name="Pages of memories")
    expect(nav).to_contain_text("Page 1 of 2")
    expect(page.locator("li.memory")).to_have_count(25)
    assert card_labels(page) == [label_of(f) for f in reversed(FRUITS)][:25]
    look(page, "flows-13-memories-page-1")
    page.locator("#page-next").click()
    expect(page).to_have_url(readme_server.url + "/memories/?page=2")
    expect(nav).to_contain_text("Page 2 of 2")
    expect(page.locator("li.memory")).to_have_count(total - 25)
    second = card_labels(page)
    assert second[:5] == [label_of(f) for f in reversed(FRUITS[:5])]
    assert sorted(second[5:]) == sorted(demo)
    look(page, "flows-14-memories-page-2")
    page.locator("#page-previous").click()
    expect(page).to_have_url(readme_server.url + "/memories/?page=1")
    expect(page.locator("li.memory").first.locator("h3")).to_have_text(label_of(FRUITS[-1]))

    # A–Z: the address keeps the order (never a search term); the pages continue the order.
    page.locator("#id_sort").select_option(label="A–Z")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page).to_have_url(readme_server.url + "/memories/?sort=az")
    alphabetical = sorted(everywhere + [label_of(f) for f in FRUITS], key=str.casefold)
    assert card_labels(page) == alphabetical[:25]
    page.locator("#page-next").click()
    expect(page).to_have_url(readme_server.url + "/memories/?sort=az&page=2")
    labels = card_labels(page)
    assert labels[: len(alphabetical) - 25] == alphabetical[25:]
    groups = page.locator("section.group")
    for index in range(groups.count()):
        in_group = groups.nth(index).locator("h3.memory-label").all_inner_texts()
        assert in_group == sorted(in_group, key=str.casefold), in_group
    look(page, "flows-15-memories-a-z-page-2")

    # An action on page 2 comes back to page 2, at the card.
    target = label_of(
        FRUITS[-3]
    )  # "Your favourite vanilla": low confidence, on page 2 in A–Z order
    card(page, target).get_by_role("button", name=f"Confirm {target}").click()
    confirmed = lands_on_card(page, readme_server)
    expect(page).to_have_url(re.compile(r"/memories/\?sort=az&page=2#m-"))
    expect(nav).to_contain_text("Page 2 of 2")
    expect(page.locator(f"#m-{confirmed} .tag")).to_have_text("Confirmed")

    # Certainty: only what is used as uncertain (six new ones and the demo's letter status).
    page.locator("#id_certainty").select_option(label="Uncertain")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page).to_have_url(readme_server.url + "/memories/?certainty=uncertain&sort=az")
    tags = page.locator("li.memory .tag")
    expect(tags).to_have_text(["Uncertain"] * 7)
    expect(page.locator("#results-count")).to_have_text("7 memories shown.")
    expect(page.get_by_role("navigation", name="Pages of memories")).to_have_count(0)
    assert card_labels(page) == sorted([label_of(f) for f in FRUITS[20:26]], key=str.casefold) + [
        "The story letter's status"
    ]
    look(page, "flows-16-memories-uncertain")
    page.locator("#id_certainty").select_option(label="No source")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.locator("li.memory .certainty-note")).to_have_text(
        ["Not used in conversations: no message of yours backs it up."] * 3
    )
    page.get_by_role("button", name="Show everything").click()
    expect(page).to_have_url(readme_server.url + "/memories/")
    expect(page.locator("li.memory")).to_have_count(25)

    # Search: the term is posted, kept for the page, and never in its address or its links.
    page.get_by_label("Search", exact=True).fill("Mango")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.locator("#results-count")).to_have_text("1 memory shown for “Mango”.")
    assert card_labels(page) == [label_of("mango")]
    expect(page.get_by_label("Search", exact=True)).to_have_value("Mango")
    assert "mango" not in page.url.casefold()
    addresses = page.evaluate("""() => [...document.querySelectorAll('a[href], form[action]')]
        .map(e => e.getAttribute('href') || e.getAttribute('action'))""")
    assert addresses and not [a for a in addresses if "mango" in a.casefold()], addresses
    look(page, "flows-17-memories-search")
    page.get_by_role("button", name="Clear search").click()
    expect(page).to_have_url(readme_server.url + "/memories/?sort=newest")
    expect(page.get_by_label("Search", exact=True)).to_have_value("")
    expect(page.locator("li.memory")).to_have_count(25)

    # The runtime sees the same certainties.
    prompt = {p["key"]: p["certainty"] for p in resolve(readme_server, person)["prompt"]}
    assert (
        prompt["user.favourite_mango"] == "likely"
        and prompt["user.favourite_vanilla"] == "confirmed"
    )
    assert prompt["user.favourite_tangerine"] == "uncertain"
    assert "user.favourite_watermelon" not in prompt and "user.favourite_ugli" not in prompt


LONG_WORD = "Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz"


def test_it_keeps_a_long_word_inside_the_window_on_every_page_that_shows_it(
    page, readme_server, person, sign_in, look
):
    """A value, a message or a conversation title may hold a word wider than a phone (a
    compound, an address): it wraps inside its card, and no page grows sideways (values wrap at
    word boundaries, and break inside a word only when it cannot fit)."""
    told = tell(readme_server, person, f"My dog's name is {LONG_WORD}.", title=LONG_WORD)
    sign_in(page, person)
    dog = card(page, "Dog's name")
    expect(dog.locator(".memory-value")).to_have_text(LONG_WORD)
    look(page, "flows-21-long-word-memories")
    dog.get_by_role("link", name="History of Dog's name").click()
    look(page, "flows-22-long-word-history")
    page.get_by_role("link", name="Conversations").click()
    expect(page.get_by_role("link", name=LONG_WORD)).to_be_visible()
    look(page, "flows-23-long-word-conversations")
    page.get_by_role("link", name=LONG_WORD).click()
    expect(page.locator(f"#m-{told['message']} .content")).to_contain_text(LONG_WORD)
    look(page, "flows-24-long-word-transcript")
    page.get_by_role("link", name="Delete this conversation").click()
    look(page, "flows-25-long-word-delete-conversation")
