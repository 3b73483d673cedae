"""The rest of a new user's walk, in Debian's Chromium against the server `make run` starts
(see conftest.py), at 1280 px: each flow is a place where a person met something wrong, and
checks it reads right now.

- The memory switches: one "Saved" message, in the switches' card; "Nothing was deleted" only
  when something was turned off (SPEC I8: neither switch deletes anything).
- The transcript: what a message taught is written at the size of the message itself.
- Wording: "What the companion used" never counts "0 earlier messages" (E2); the forget page
  never says "only what is remembered only in …"; "Forget 1 memory?" goes with "Back, keep
  it"; the time-zone message names the zone as the list does; the Forgotten page tells a
  forget of what applies everywhere from a forget in every scope (F1: scope `user` is not `*`).
- The API's problem pages are documentation, not the user's private pages (no "Only you can
  see these pages").
- /favicon.ico is an icon, and every page names it.
- The Learn/Use switches: each checkbox sits on the line of its label.
- Support (SPEC §13): opening a reveal says it once (the banner), not twice; a staff member
  without the permission gets the admin's own 403 page with the reason; the explain page shows
  times as people read them, the user pages' labels, when a forgotten value was erased, and a
  memory table that fits its box.
- The demo (`make run`): every forget comes after the message that asks for it.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, screenshot
from tests.browser.helpers import admin_sign_in, support_staff

ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium")


def conversation_url(page, server, title: str = "The rooftop greenhouse") -> str:
    page.goto(server.url + "/conversations/")
    page.get_by_role("link", name=title, exact=True).click()
    return page.url


# --- the user's pages ----------------------------------------------------------------------------


def test_it_says_saved_once_and_nothing_deleted_only_when_a_switch_turns_off(
    desktop, readme_server, person, sign_in, look
):
    """I8: the save's message once, beside the switches; "Nothing was deleted" reassures only
    when something was turned off."""
    page = desktop
    sign_in(page, person)
    page.get_by_label("Use memories in conversations").uncheck()
    page.locator("#switches-save").click()
    saved = page.locator("li.message", has_text="Saved:")
    expect(saved).to_have_count(1)
    expect(page.locator("#switches .card-notice")).to_contain_text("Nothing was deleted.")
    look(page, "walk-switch-off")

    page.get_by_label("Use memories in conversations").check()
    page.locator("#switches-save").click()
    expect(saved).to_have_count(1)
    expect(page.locator("#switches .card-notice")).to_have_text(
        "Saved: the companion learns from your messages and uses these memories in conversations."
    )
    look(page, "walk-switch-on")


def test_it_sits_each_switch_on_the_line_of_its_label(desktop, readme_server, person, sign_in):
    """The Learn and Use checkboxes sit beside their labels, not on a line of their own above."""
    page = desktop
    sign_in(page, person)
    for name in ("Learn from my messages", "Use memories in conversations"):
        box = page.get_by_label(name).bounding_box()
        label = page.locator("#switches label", has_text=name).bounding_box()
        assert box["y"] < label["y"] + label["height"] and label["y"] < box["y"] + box["height"], (
            name,
            box,
            label,
        )
        assert box["x"] + box["width"] <= label["x"], (name, box, label)
    screenshot(page, "walk-switches")


def test_it_writes_what_a_message_taught_at_the_size_of_the_message(
    desktop, readme_server, person, sign_in, look
):
    page = desktop
    sign_in(page, person)
    conversation_url(page, readme_server)
    message = page.locator("li.role-user .content").first
    taught = page.locator(".produced .memory-value").first
    expect(taught).to_be_visible()
    size = taught.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert size <= message.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    look(page, "walk-transcript")


def test_it_counts_earlier_messages_in_words_under_what_the_companion_used(
    desktop, readme_server, person, sign_in
):
    """E2: the first reply had no earlier message, and says so in words."""
    page = desktop
    sign_in(page, person)
    conversation_url(page, readme_server)
    first = page.locator("details.used").first
    first.locator("summary").click()
    expect(first).to_contain_text("It was given no earlier messages.")
    expect(page.locator("main")).not_to_contain_text(re.compile(r"\b0 earlier message"))
    screenshot(page, "walk-used-first")


def test_it_says_where_in_plain_words_on_the_forget_page(
    desktop, readme_server, person, sign_in, look
):
    """F1: a memory kept in one conversation is forgotten there unless the person chooses
    everywhere — said once, without "only … only"."""
    page = desktop
    sign_in(page, person)
    page.get_by_role("link", name="Forget The story's meeting").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Forget “The story's meeting”?")
    expect(page.locator("main")).not_to_contain_text("only what is remembered only")
    expect(page.locator("fieldset")).to_contain_text(
        "Unless you choose otherwise, it is forgotten where it is remembered: "
        "only in “The rooftop greenhouse” with The Night Caretaker."
    )
    look(page, "walk-forget-conversation")


def test_it_speaks_of_one_memory_when_one_selected_memory_is_forgotten(
    desktop, readme_server, person, sign_in, look
):
    page = desktop
    sign_in(page, person)
    page.get_by_label("Select Dislikes", exact=True).check()
    page.locator("#forget-selected-button").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Forget 1 memory?")
    expect(page.get_by_role("link", name="← Back, keep it", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Cancel, keep it", exact=True)).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("keep them")
    look(page, "walk-forget-one")


def test_it_names_the_time_zone_in_the_message_as_the_list_does(
    desktop, readme_server, person, sign_in
):
    page = desktop
    sign_in(page, person)
    page.goto(readme_server.url + "/data/")
    zone = page.get_by_role("combobox", name="Your time zone")
    zone.select_option("America/Argentina/Buenos_Aires")
    shown = zone.locator("option:checked").inner_text()
    region = zone.locator("option:checked").evaluate("o => o.parentElement.label")
    assert (shown, region) == ("Argentina – Buenos Aires", "America")
    page.locator("#time-zone-save").click()
    expect(page.locator("#time-zone .card-notice")).to_have_text(
        "Times are now shown in Argentina – Buenos Aires (America)."
    )
    screenshot(page, "walk-time-zone")


def test_it_tells_everywhere_from_every_scope_on_the_forgotten_page(
    desktop, readme_server, person, sign_in, look
):
    """F1: a forget of what applies everywhere (scope `user`) leaves what one character alone
    was told; a forget in every scope (`*`, the demo's "where I live") covers all of it. The
    Forgotten page says which."""
    page = desktop
    sign_in(page, person)
    page.get_by_role("link", name="Forget Dislikes").click()
    page.get_by_role("button", name="Forget it").click()
    page.goto(readme_server.url + "/memories/forgotten/")
    dislikes = page.locator("li", has=page.get_by_role("heading", name="Dislikes", exact=True))
    lives = page.locator("li", has=page.get_by_role("heading", name="Lives in", exact=True))
    expect(dislikes.locator(".meta")).to_contain_text(
        "What applies everywhere; not what one character or conversation alone was told"
    )
    expect(lives.locator(".meta")).to_contain_text(
        "In every scope: with every character and in every conversation"
    )
    look(page, "walk-forgotten")


def test_it_does_not_treat_the_problem_pages_as_a_users_private_pages(desktop, readme_server, look):
    page = desktop
    for path in ("/problems/", "/problems/not_found"):
        page.goto(readme_server.url + path)
        expect(page.locator("footer")).not_to_contain_text("Only you can see these pages")
        expect(page.locator("footer")).to_contain_text("the API")
        look(page, "walk-problems" + path.replace("/", "-").rstrip("-"))


def test_it_gives_every_page_an_icon(desktop, readme_server, person, sign_in):
    page = desktop
    response = page.request.get(readme_server.url + "/favicon.ico")
    assert response.status == 200 and response.headers["content-type"] in (
        "image/x-icon",
        "image/vnd.microsoft.icon",
    )
    assert response.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    sign_in(page, person)
    icon = page.locator("link[rel=icon]").first.get_attribute("href")
    assert page.request.get(readme_server.url + icon).status == 200
    page.goto(readme_server.url + "/admin/login/")
    icon = page.locator("link[rel=icon]").first.get_attribute("href")
    assert page.request.get(readme_server.url + icon).status == 200


# --- support --------------------------------------------------------------------------------------


def test_it_says_once_that_a_reveal_was_opened(desktop, readme_server, person):
    page, server = desktop, readme_server
    admin_sign_in(page, server, support_staff(server, "walk-reveal-once", private_text=True))
    page.goto(f"{server.url}/admin/support/reveal/?user={person.username}")
    page.fill("#id_reason", "Ticket 8801: the user asked what the companion keeps.")
    page.click("#reveal-submit")
    expect(page.locator("#reveal-banner")).to_be_visible()
    assert (
        page.locator("#main").inner_text().count(f"You can see {person.username}'s private text")
        == 1
    )
    screenshot(page, "walk-reveal-once")
    page.locator("#reveal-close").click()


def test_it_gives_staff_without_the_permission_the_admins_403_with_the_reason(
    desktop, readme_server, person
):
    page, server = desktop, readme_server
    admin_sign_in(page, server, support_staff(server, "walk-no-reveal", private_text=False))
    response = page.goto(f"{server.url}/admin/support/reveal/?user={person.username}")
    assert response.status == 403
    expect(page.locator("#site-name")).to_be_visible()  # the admin's page, not the user site's
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    expect(page.locator("#content")).to_contain_text("permission to reveal a user's private text")
    expect(page.locator("footer.site-footer")).to_have_count(0)
    screenshot(page, "walk-admin-403")


def test_it_makes_the_explain_page_read_like_the_users_pages_and_fit(
    desktop, readme_server, person
):
    """The explain page of a turn: no raw ISO times, the user pages' labels, the date a
    forgotten value was erased, and the memory table inside its box at 1280 px."""
    page, server = desktop, readme_server
    staff = support_staff(server, "walk-explain", private_text=True)
    admin_sign_in(page, server, staff)
    page.goto(f"{server.url}/admin/support/reveal/?user={person.username}")
    page.fill("#id_reason", "Ticket 8802: checking what the plan held.")
    page.click("#reveal-submit")
    page.goto(f"{server.url}/admin/conversations/turn/?q={person.username}")
    page.locator("a", has_text="Explain").first.click()
    expect(page.get_by_role("heading", name="Explain a context")).to_be_visible()
    # The form's own help shows the format a time is typed in; what the page answers does not.
    shown = page.locator("#content-main").evaluate(
        "m => { const c = m.cloneNode(true); c.querySelector('#explain-form').remove(); return "
        "c.innerText; }"
    )
    assert not ISO_TIME.search(shown), ISO_TIME.search(shown)
    expect(page.locator("#explain-records")).to_contain_text("The basil plant's location")
    expect(page.locator("#explain-records")).not_to_contain_text("Basil plant: location")
    expect(page.locator("#explain-records")).to_contain_text(
        re.compile(r"erased on \d{1,2} \w{3} \d{4}")
    )
    expect(page.locator("#plan-snapshot")).to_contain_text(
        re.compile(r"erased on \d{1,2} \w{3} \d{4}")
    )
    expect(page.locator("#plan-snapshot")).not_to_contain_text("forgotten since)")
    table = page.locator("#explain-records")
    widths = table.evaluate("t => [t.getBoundingClientRect().width, t.parentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    screenshot(page, "walk-explain")
    page.locator("#reveal-close").click()


# --- the demo -------------------------------------------------------------------------------------


def test_it_runs_the_demos_forget_after_the_message_that_asks_for_it(
    desktop, readme_server, person, sign_in
):
    """The demo's "Please forget where I live." is said before the forget it asks for."""
    page = desktop
    tombstones = readme_server.api("GET", f"/tombstones?user={person.username}")
    tombstones = tombstones["results"] if isinstance(tombstones, dict) else tombstones
    forgotten_at = datetime.fromisoformat(
        next(t["forgotten_at"] for t in tombstones if t["key"] == "user.lives_in").replace(
            "Z", "+00:00"
        )
    )
    sign_in(page, person)
    conversation_url(page, readme_server)
    asked = page.locator("li.message-item", has_text="Please forget where I live.")
    said_at = datetime.fromisoformat(asked.locator("time").first.get_attribute("datetime"))
    assert said_at < forgotten_at, (said_at, forgotten_at)


def test_it_says_on_your_data_how_to_read_the_files_status_and_secret(
    desktop, readme_server, person, sign_in
):
    """§9, E1: the export carries stored rows, never state — a replaced value can still say
    `status: active` — and `user.secret`; the page that offers the file says what both are and
    where what holds now is read."""
    page = desktop
    snapshot = readme_server.api("GET", f"/users/{person.username}/export")
    names = [m for m in snapshot["memories"] if m["key"] == "basil_plant.name"]
    assert {m["status"] for m in names} == {"active"} and len(names) == 2  # Harbor, replaced, too
    assert snapshot["user"]["secret"]
    sign_in(page, person)
    page.goto(readme_server.url + "/data/")
    page.get_by_text("Reading the file").click()
    fields = page.locator("#export-fields")
    expect(fields).to_contain_text("a value you replaced later can still say active")
    expect(fields).to_contain_text("the Memories page and each memory's history show it")
    expect(fields).to_contain_text("user.secret is a random key of yours")
    screenshot(page, "walk-export-fields")


# --- boundaries wherever they apply (SPEC §6) -----------------------------------------------------


def test_it_sets_a_boundary_for_a_scene_and_names_the_exceptions_everywhere(
    desktop, readme_server, person, sign_in, look
):
    """§6: the demo's greenhouse scene is a place to choose for, like a conversation; the
    everywhere card names the places where it does not hold, and a choice that holds only when
    the companion asks says so where it decides."""
    page = desktop
    sign_in(page, person)
    page.goto(readme_server.url + "/boundaries/")
    images = page.locator("#card-night-caretaker-media-image")
    images.locator("summary").click()
    images.get_by_label("Choice for images").select_option(label="Never")
    images.get_by_label("Where for images").select_option(
        label="only in the “greenhouse” scene of “The rooftop greenhouse”"
    )
    images.get_by_role("button", name=re.compile("^Save")).click()
    expect(images.locator(".card-notice")).to_have_text(
        "Saved: Images — never, only in the “greenhouse” scene of “The rooftop greenhouse” with "
        "The Night Caretaker."
    )
    expect(images.locator(".applies")).to_contain_text(
        "In the “greenhouse” scene of “The rooftop greenhouse”: Not allowed"
    )
    expect(page.locator("#card-everywhere-media-image .applies")).to_contain_text(
        "Everywhere: Asks you first, except in the “greenhouse” scene of “The rooftop greenhouse”: "
        "never."
    )
    expect(page.locator("#card-night-caretaker-tone-playful .applies")).to_contain_text(
        "In “The rooftop greenhouse”: Allowed when the companion asks"
    )
    look(page, "walk-boundaries-scene")
    decided = readme_server.api(
        "POST",
        "/policy/decide",
        {
            "context": {
                "user": person.username,
                "character": "night-caretaker",
                "conversation": conversation_id(readme_server, person),
                "scene": "greenhouse",
            },
            "capability": "media.image",
            "requested_by": "assistant",
        },
    )
    assert decided["effect"] == "deny"


def conversation_id(server, person) -> str:
    found = server.api("GET", f"/users/{person.username}/export")
    return next(c["id"] for c in found["conversations"] if c["title"] == "The rooftop greenhouse")
