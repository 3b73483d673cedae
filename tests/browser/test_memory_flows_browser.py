"""The memory pages' actions as a person uses them, in Debian's Chromium against the server
`make run` starts (see conftest.py), at 1280 and 390 px, with `look()` (the stylesheet, the
page width, screen-reader text, axe-core and a screenshot) on every page visited.

Each flow asserts what the person sees (the words, where the focus is, the card the address
ends in) and then what the chat runtime gets through the API (resolve, a new prompt plan, the
memory itself, the export):

- confirm (SPEC §2), and confirming again changes nothing;
- correct with the same value is a confirm (SPEC §2): nothing is replaced in history;
- "no longer true" (W10) and its undo, from the card's place and from the list of what was
  marked no longer true; history shows the gap;
- forget selected (F1/F2): one confirmation page lists them, then they are gone.

Many cards, order, certainty and search are in test_memory_list_browser.py; the time zone and
the memory switches in test_memory_settings_browser.py.
"""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from .helpers import (
    active_values,
    card,
    history_of,
    lands_on_card,
    new_plan,
    no_longer_true,
    resolve,
    tell,
)


def test_it_confirms_a_memory_and_confirming_again_changes_nothing(
    page, readme_server, person, sign_in, look
):
    """SPEC §2 Confirm: a rule-extracted memory becomes the user's own word ("Confirmed"),
    one new record valid from now; confirming what the user already confirmed stores nothing
    and says "nothing changed" — from the API and from a page that was open before."""
    told = tell(readme_server, person, "My dog's name is Rex.")
    [extracted] = [e["memory"] for e in told["extracted"] if e["memory"]["key"] == "dog.name"]
    assert extracted["authority"] == "rule-extracted"
    sign_in(page, person)
    dog = card(page, "Dog's name")
    expect(dog.locator(".tag")).to_have_text("Likely")
    expect(dog.locator(".certainty-note")).to_have_text("Used in conversations as probably true.")
    # The same page in a second tab, opened before the confirm.
    earlier = page.context.new_page()
    earlier.goto(readme_server.url + "/memories/")

    dog.get_by_role("button", name="Confirm Dog's name").click()
    confirmed = lands_on_card(page, readme_server)
    assert confirmed != extracted["id"]
    dog = page.locator(f"#m-{confirmed}")
    expect(dog.locator(".card-notice")).to_have_text(
        "Confirmed “Dog's name”. It now counts as something you said yourself."
    )
    expect(page.locator("#messages")).to_have_count(0)  # the message is beside the card only
    expect(dog.locator(".memory-value")).to_have_text("Rex")
    expect(dog.locator(".tag")).to_have_text("Confirmed")
    expect(dog.locator(".certainty-note")).to_have_text(
        "Used in conversations as a fact: you said so yourself."
    )
    expect(dog).to_contain_text("You confirmed it on ")
    expect(dog.get_by_role("button", name="Confirm Dog's name")).to_have_count(0)
    look(page, "flows-01-confirmed")

    # The runtime: the confirmed record is the one in use, as a fact.
    answer = resolve(readme_server, person, **{k: v for k, v in told["ctx"].items() if k != "user"})
    assert [m["id"] for m in answer["active"] if m["key"] == "dog.name"] == [confirmed]
    assert active_values(answer, "dog.name") == [("Rex", "user-confirmed")]
    assert [(p["value"], p["certainty"]) for p in answer["prompt"] if p["key"] == "dog.name"] == [
        ("Rex", "confirmed")
    ]

    # Confirming again stores nothing: the API answers `unchanged` with the same record ...
    again = readme_server.api("POST", f"/memories/{confirmed}/confirm", {})
    assert (again["outcome"], again["memory"]["id"]) == ("unchanged", confirmed)
    # ... and so does the page that still offered "Confirm", beside the card it confirmed.
    earlier.locator(f"#m-{extracted['id']}").get_by_role(
        "button", name="Confirm Dog's name"
    ).click()
    assert lands_on_card(earlier, readme_server) == confirmed
    expect(earlier.locator(f"#m-{confirmed} .card-notice")).to_have_text(
        "Nothing changed: “Dog's name” was already confirmed by you."
    )
    look(earlier, "flows-02-confirmed-again")
    earlier.close()
    assert [
        (r["authority"], r["value"]) for r in history_of(readme_server, person, "dog.name")
    ] == [("rule-extracted", "Rex"), ("user-confirmed", "Rex")]

    # History: one value, confirmed on a day — never "replaced".
    dog.get_by_role("link", name="History of Dog's name").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("History of “Dog's name”")
    expect(page.locator("table.history tbody tr")).to_have_count(1)
    expect(page.locator("tr.is-current .confirmed-on")).to_have_text(
        re.compile(r"^You confirmed it on \d{1,2} \w{3} \d{4}$")
    )
    expect(page.locator("table.history")).not_to_contain_text("Replaced")
    look(page, "flows-03-history-confirmed")


def test_it_treats_a_correction_with_the_same_value_as_a_confirm(
    page, readme_server, person, sign_in, look
):
    """SPEC §2: a correct whose value equals the record's (normalised as in §1: case, spaces)
    is a confirm — the value stays as it was, nothing is replaced in history — and saving it
    once more changes nothing."""
    sign_in(page, person)
    dislikes = card(page, "Dislikes")
    original = dislikes.get_attribute("id").removeprefix("m-")
    expect(dislikes.locator(".memory-value")).to_have_text("being rushed")
    before = history_of(readme_server, person, "user.dislikes")

    dislikes.locator("summary", has_text="Correct").click()
    field = dislikes.get_by_label("New value for Dislikes")
    expect(field).to_be_focused()
    expect(field).to_have_value("being rushed")
    field.fill("  Being Rushed ")
    dislikes.get_by_role("button", name="Save correction").click()

    confirmed = lands_on_card(page, readme_server)
    assert confirmed != original
    dislikes = page.locator(f"#m-{confirmed}")
    expect(dislikes.locator(".card-notice")).to_have_text(
        "Confirmed “Dislikes”: the value you saved is the one remembered. "
        "It now counts as something you said yourself."
    )
    expect(dislikes.locator(".memory-value")).to_have_text("being rushed")
    expect(dislikes.locator(".tag")).to_have_text("Confirmed")
    expect(page.locator("main")).not_to_contain_text("will not be used again")
    look(page, "flows-04-correct-same-value")

    # Once more, on the confirmed card: nothing changed, nothing stored.
    dislikes.locator("summary", has_text="Correct").click()
    dislikes.get_by_label("New value for Dislikes").fill("being rushed")
    dislikes.get_by_role("button", name="Save correction").click()
    assert lands_on_card(page, readme_server) == confirmed
    expect(page.locator(f"#m-{confirmed} .card-notice")).to_have_text(
        "Nothing changed: “Dislikes” already holds that value, as you said it."
    )

    # The runtime: one new record, the user's confirmation of the same value.
    after = history_of(readme_server, person, "user.dislikes")
    assert len(after) == len(before) + 1
    assert [
        (r["id"], r["authority"], r["value"], r["supersedes"])
        for r in after
        if r["id"] not in {b["id"] for b in before}
    ] == [(confirmed, "user-confirmed", "being rushed", original)]
    answer = resolve(readme_server, person)
    assert active_values(answer, "user.dislikes") == [("being rushed", "user-confirmed")]
    assert ("user.dislikes", "being rushed", "confirmed") in [
        (p["key"], p["value"], p["certainty"]) for p in answer["prompt"]
    ]

    page.locator(f"#m-{confirmed}").get_by_role("link", name="History of Dislikes").click()
    expect(page.locator("table.history tbody tr")).to_have_count(1)
    expect(page.locator("tr.is-current")).to_contain_text("being rushed")
    expect(page.locator("tr.is-current .confirmed-on")).to_be_visible()
    expect(page.locator("table.history")).not_to_contain_text("Replaced")
    look(page, "flows-05-history-correct-same-value")


def test_it_marks_a_memory_no_longer_true_and_undoes_it(page, readme_server, person, sign_in, look):
    """W10: "no longer true" closes the slot now: the card's place offers the undo and the
    memory is listed on /memories/no-longer-true/; the runtime no longer gets it. The undo
    asserts the value again as the user's own, from now on; history shows the time between."""
    told = tell(readme_server, person, "My dog's name is Rex.")
    context = {k: v for k, v in told["ctx"].items() if k != "user"}
    sign_in(page, person)
    expect(page.locator("#no-longer-true-link")).to_have_count(0)

    card(page, "Dog's name").get_by_role("button", name=no_longer_true("Dog's name")).click()
    rex = lands_on_card(page, readme_server)
    place = page.locator(f"#m-{rex}")
    expect(place.locator(".card-notice")).to_have_text(
        "“Dog's name” is no longer treated as true. Its history keeps the old value, "
        "and older messages will not bring it back."
    )
    expect(place.locator(".tag")).to_have_text("No longer true")
    expect(place.get_by_role("button", name="Undo: it is true (Dog's name)")).to_be_visible()
    look(page, "flows-06-no-longer-true")

    assert active_values(resolve(readme_server, person, **context), "dog.name") == []
    plan = new_plan(readme_server, told["id"], "retracted")
    assert "dog.name" not in [m["key"] for m in plan["memories"]]

    # The list of what was marked no longer true holds it; undo it from there.
    expect(page.locator("#no-longer-true-link")).to_have_text("1 thing you marked no longer true")
    page.locator("#no-longer-true-link").click()
    expect(page).to_have_url(readme_server.url + "/memories/no-longer-true/")
    listed = page.locator(f"#m-{rex}")
    expect(listed.locator(".memory-label")).to_have_text("Dog's name")
    expect(listed.locator(".memory-value")).to_have_text("Rex")
    expect(listed).to_contain_text("marked no longer true on ")
    look(page, "flows-07-no-longer-true-list")
    listed.get_by_role("button", name="Undo: it is true (Dog's name)").click()

    again = lands_on_card(page, readme_server)
    assert again != rex
    dog = page.locator(f"#m-{again}")
    expect(dog.locator(".card-notice")).to_have_text(
        "“Dog's name” is remembered again, as something you said yourself, from now on. "
        "Its history shows the time it was not."
    )
    expect(dog.locator(".memory-value")).to_have_text("Rex")
    expect(dog.locator(".tag")).to_have_text("Confirmed")
    expect(page.locator("#no-longer-true-link")).to_have_count(0)
    look(page, "flows-08-undone")

    assert active_values(resolve(readme_server, person, **context), "dog.name") == [
        ("Rex", "user-confirmed")
    ]
    plan = new_plan(readme_server, told["id"], "restored")
    assert [(m["value"], m["certainty"]) for m in plan["memories"] if m["key"] == "dog.name"] == [
        ("Rex", "confirmed")
    ]

    # History: the old value (no longer true), the time without one, the value again.
    dog.get_by_role("link", name="History of Dog's name").click()
    rows = page.locator("table.history tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("No longer true")
    expect(rows.nth(1)).to_have_class("gap")
    expect(rows.nth(1)).to_have_text(
        re.compile(
            r"^\s*Nothing remembered from .+ until .+ \(it was marked no longer true\)\.\s*$"
        )
    )
    expect(rows.nth(2)).to_have_class("is-current")
    expect(rows.nth(2)).to_contain_text("Rex")
    look(page, "flows-09-history-with-gap")

    # The undo in the card's place, straight after "no longer true" (a key with several values).
    page.goto(readme_server.url + "/memories/")
    card(page, "Dislikes").get_by_role("button", name=no_longer_true("Dislikes")).click()
    was = lands_on_card(page, readme_server)
    page.locator(f"#m-{was}").get_by_role("button", name="Undo: it is true (Dislikes)").click()
    back = lands_on_card(page, readme_server)
    expect(page.locator(f"#m-{back} .memory-value")).to_have_text("being rushed")
    assert active_values(resolve(readme_server, person), "user.dislikes") == [
        ("being rushed", "user-confirmed")
    ]


WEBSITE = (
    "https://example.org/notes/an-address-far-longer-than-a-phone-is-wide/without-a-single-space"
)


def test_it_forgets_the_selected_memories_after_one_confirmation(
    page, readme_server, person, sign_in, look
):
    """F1/F2 for several at once: tick four cards, one page lists exactly those, and once
    confirmed each is forgotten as a forget of its own would be — gone from the page, erased
    in the runtime's records, excluded as forgotten by the resolver. One value is an address
    with no space in it: the cards wrap it, and the page stays as wide as a phone."""
    made = readme_server.api(
        "POST",
        "/memories",
        {
            "user": person.username,
            "key": "user.website",
            "value": WEBSITE,
            "scope": {"kind": "user"},
            "authority": "user-confirmed",
        },
    )
    assert made["outcome"] == "created"
    sign_in(page, person)
    expect(card(page, "Your website").locator(".memory-value")).to_have_text(WEBSITE)
    chosen = ["Dislikes", "The scene's lamp", "The story's meeting", "Your website"]
    ids = {}
    for label in chosen:
        box = page.get_by_label(f"Select {label}", exact=True)
        box.check()
        ids[label] = box.get_attribute("id").removeprefix("select-")
    assert ids == {
        label: card(page, label).get_attribute("id").removeprefix("m-") for label in chosen
    }
    look(page, "flows-10-selected")
    page.locator("#forget-selected-button").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Forget 4 memories?")
    listed = page.locator("#forget-selected-list > li")
    expect(listed.locator(".memory-label")).to_have_text(chosen)
    expect(listed.nth(0)).to_contain_text("being rushed")
    expect(page.locator("main")).not_to_contain_text("Basil plant's name")
    look(page, "flows-11-forget-selected-confirm")
    page.locator("#forget-selected-confirm").click()

    expect(page).to_have_url(readme_server.url + "/memories/#messages")
    expect(page.locator("#messages")).to_be_focused()
    expect(page.locator("#messages")).to_have_text(
        "Forgotten: 4 memories (“Dislikes”, “The scene's lamp”, “The story's meeting”, “Your "
        "website”). "
        "The values are erased, the companion no longer sees the 2 messages that held them, "
        "and old messages will not bring them back."
    )  # F6: the demo's two messages that held them
    for label in chosen:
        expect(card(page, label)).to_have_count(0)
    for value in ("being rushed", "the work lamp is on", "Thursdays at", WEBSITE):
        expect(page.locator("main")).not_to_contain_text(value)
    expect(card(page, "Basil plant's name")).to_have_count(1)  # what was not ticked stays
    look(page, "flows-12-forgotten-selected")

    answer = resolve(readme_server, person)
    assert {"id": ids["Dislikes"], "reason": "forgotten"} in answer["excluded"]
    assert "being rushed" not in json.dumps(answer)
    keys = set()
    for memory_id in ids.values():
        memory = readme_server.api("GET", f"/memories/{memory_id}")
        assert (memory["status"], memory["value"]) == ("forgotten", "")
        keys.add(memory["key"])
    tombstones = readme_server.api("GET", f"/tombstones?user={person.username}")
    tombstones = tombstones["results"] if isinstance(tombstones, dict) else tombstones
    assert keys <= {t["key"] for t in tombstones} and "user.dislikes" in keys
