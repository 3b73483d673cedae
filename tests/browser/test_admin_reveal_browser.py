"""Support staff and private text (SPEC §13 S1, S2), in Debian's Chromium against the server
`make run` starts (see conftest.py; there a reveal lasts `REVEAL_SECONDS`), at 1280 px.

- A reveal, end to end: a staff member with `view_private_text` finds a user's memories
  masked, opens a reveal from a masked value (a short reason is refused, with the error on the
  form), sees the user's text under the reveal's banner, waits out its time and sees the masks
  come back; the user finds the reveal, with its reason and without the staff member's name,
  under "Support access" on their "Your data" page.
- The support pages pass axe-core with no violation: the lists, change pages, explain views,
  the reveal form, a user's page and an action's confirmation, masked and inside a reveal.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, REVEAL_SECONDS, assert_no_axe_violations, screenshot
from tests.browser.helpers import admin_sign_in, support_staff

REASON = "Ticket 5120: the user asked why the companion keeps their plant's old name."
WIDTH = 1280

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium")


def checked(page, name: str) -> None:
    """axe-core finds nothing on the page as it is now; its screenshot is kept."""
    page.wait_for_load_state("load")
    assert_no_axe_violations(page)
    screenshot(page, name)


def test_it_reveals_one_users_text_until_the_reveals_time_is_up(
    desktop, readme_server, person, sign_in, look
):
    page, server = desktop, readme_server
    staff = support_staff(server, "support-reveal-flow", private_text=True)
    admin_sign_in(page, server, staff)

    # Masked: the key and a way to reveal, never the value.
    page.goto(f"{server.url}/admin/memory/memoryrecord/?q={person.username}")
    row = page.locator("#result_list tbody tr", has_text="basil_plant.name").first
    expect(row.locator(".private-masked")).to_be_visible()
    assert "Marlowe" not in page.content()
    checked(page, "admin-reveal-01-masked")

    # Open a reveal from the masked value: a short reason is refused and opens nothing.
    row.locator("a.reveal-link").click()
    expect(page.get_by_role("heading", name="Reveal a user's private text")).to_be_visible()
    expect(page.locator("#id_user")).to_have_value(person.username)
    checked(page, "admin-reveal-02-form")
    page.fill("#id_reason", "ticket 1")
    page.click("#reveal-submit")
    expect(page.locator("#reveal-form .errorlist")).to_contain_text("At least 10 characters")
    expect(page.locator("#reveal-banner")).to_have_count(0)
    checked(page, "admin-reveal-03-form-error")
    page.fill("#id_reason", REASON)
    page.click("#reveal-submit")

    # Inside the reveal: back on the list, the user's text shows under the banner.
    expect(page.locator("#reveal-banner")).to_contain_text(
        f"You can see {person.username}'s private text"
    )
    expect(page.locator("#reveal-banner")).to_contain_text("Every page that shows it is logged")
    expect(page.locator(".messagelist")).to_have_count(0)  # the banner says it, once
    opened = time.monotonic()
    page.goto(f"{server.url}/admin/memory/memoryrecord/?q={person.username}")
    expect(page.locator("#result_list")).to_contain_text("Marlowe")
    checked(page, "admin-reveal-04-revealed")

    # Its time runs out: the next page drawn is masked again, and says why.
    time.sleep(max(0.0, REVEAL_SECONDS - (time.monotonic() - opened)))
    deadline = time.monotonic() + 30
    while True:
        page.reload()
        if page.locator("#reveal-banner").count() == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    expect(page.locator("#reveal-banner")).to_have_count(0)
    expect(page.locator(".messagelist")).to_contain_text("private text ended at")
    assert "Marlowe" not in page.content()
    expect(page.locator("#result_list .private-masked").first).to_be_visible()
    checked(page, "admin-reveal-05-masked-again")

    # The user sees the reveal on "Your data": when, how long, the reason — not who.
    user_page = page.context.browser.new_context(
        viewport={"width": WIDTH, "height": 900}
    ).new_page()
    sign_in(user_page, person)
    user_page.goto(f"{server.url}/data/")
    access = user_page.locator("#support-access")
    expect(access.locator("li.reveal")).to_have_count(1)
    expect(access).to_contain_text(REASON)
    expect(access).to_contain_text("by a support team member")
    expect(access).to_contain_text(re.compile(r"for (less than a minute|\d+ minutes?)"))
    assert staff[0] not in access.inner_text()
    look(user_page, "data-support-access")
    user_page.context.close()


def test_it_passes_axe_on_the_support_pages(desktop, readme_server, person):
    page, server = desktop, readme_server
    url = server.url
    for staff, private_text in (
        (support_staff(server, "support-axe", private_text=False), False),
        (support_staff(server, "support-axe-private", private_text=True), True),
    ):
        admin_sign_in(page, server, staff)
        checked(page, f"admin-axe-index-{private_text}")
        pages = [
            f"/admin/memory/memoryrecord/?q={person.username}",
            f"/admin/conversations/message/?q={person.username}",
            f"/admin/conversations/conversation/?q={person.username}",
            f"/admin/conversations/turn/?q={person.username}",
            f"/admin/memory/tombstone/?q={person.username}",
            "/admin/support/supportaction/",
            "/admin/support/explain/",
            f"/admin/support/explain/?user={person.username}",
            f"/admin/auth/user/?q={person.username}",
        ]
        for path in pages:
            page.goto(url + path)
            checked(page, f"admin-axe-{re.sub(r'[^a-z]+', '-', path.split('?')[0])}{private_text}")
        # A record's, a message's and a turn's page; explain from a turn; the user's page.
        for listing in ("memory/memoryrecord", "conversations/message", "conversations/turn"):
            page.goto(f"{url}/admin/{listing}/?q={person.username}")
            page.locator("#result_list tbody tr th a").first.click()
            checked(page, f"admin-axe-{listing.replace('/', '-')}-change-{private_text}")
        page.get_by_role("link", name=re.compile("^Explain this turn")).click()
        expect(page.get_by_role("heading", name="Explain a context")).to_be_visible()
        checked(page, f"admin-axe-explain-turn-{private_text}")
        page.goto(f"{url}/admin/auth/user/?q={person.username}")
        page.locator("#result_list tbody tr th a", has_text=person.username).click()
        checked(page, f"admin-axe-user-{private_text}")
        # An action's confirmation page.
        page.goto(f"{url}/admin/memory/memoryrecord/?q={person.username}")
        page.locator("#result_list tbody input[name=_selected_action]").first.check()
        page.select_option("select[name=action]", "retract")
        page.click("button[name=index]")
        expect(page.locator("#support-action-form")).to_be_visible()
        checked(page, f"admin-axe-action-{private_text}")
        if private_text:
            # The reveal form, then a list and a change page inside the reveal (its banner).
            page.goto(f"{url}/admin/auth/user/?q={person.username}")
            page.locator("#result_list tbody tr th a", has_text=person.username).click()
            page.locator("#reveal-this-user").click()
            checked(page, "admin-axe-reveal-form")
            page.fill("#id_reason", "Ticket 77: checking the pages support staff use.")
            page.click("#reveal-submit")
            expect(page.locator("#reveal-banner")).to_be_visible()
            checked(page, "admin-axe-revealed-user")
            page.goto(f"{url}/admin/memory/memoryrecord/?q={person.username}")
            checked(page, "admin-axe-revealed-list")
            page.locator("#reveal-close").click()
            expect(page.locator("#reveal-banner")).to_have_count(0)
        page.context.clear_cookies()
