"""SPEC E1 as a person and as support staff see it, in Debian's Chromium against the server
`make run` starts (see conftest.py), at 1280 and 390 px: every surface tells the state a
memory is in now, in one set of words, never the stored status.

- The transcript's "Remembered from this message": a memory the person only confirmed is
  remembered (as the memories page says, "Confirmed"), not "replaced".
- "No longer true" and its undo: the transcript says "no longer true", and after the undo that
  the value is remembered again — not "no longer true" any more.
- The admin's memory list: a State column and a state filter that agree with the API's
  `GET /memories?state=` for the demo's corrected basil plant (v1 "Harbor" is stored `active`
  but superseded).
"""

from __future__ import annotations

import re
import secrets

from playwright.sync_api import expect

from .helpers import card, lands_on_card, tell

CONFIRMED = "remembered now: you confirmed it"


def produced(page, message_id: str):
    """What the transcript says was remembered from one message."""
    return page.locator(f"#m-{message_id} .produced")


def test_it_does_not_show_a_confirmed_memory_as_replaced_in_the_transcript_e1(
    page, readme_server, person, sign_in, look
):
    told = tell(readme_server, person, "My dog's name is Rex.")
    sign_in(page, person)
    page.goto(f"{readme_server.url}/conversations/{told['id']}/")
    expect(produced(page, told["message"]).locator(".status")).to_have_text(["remembered now"])

    page.goto(f"{readme_server.url}/memories/")
    card(page, "Dog's name").get_by_role("button", name="Confirm Dog's name").click()
    confirmed = lands_on_card(page, readme_server)
    expect(page.locator(f"#m-{confirmed} .tag")).to_have_text("Confirmed")

    page.goto(f"{readme_server.url}/conversations/{told['id']}/")
    said = produced(page, told["message"])
    expect(said.locator(".status")).to_have_text([CONFIRMED])
    expect(said).not_to_contain_text("replaced")
    look(page, "states-01-transcript-confirmed")
    # The runtime agrees: the first record is superseded by the confirmation, which is active.
    [first] = [e["memory"] for e in told["extracted"] if e["memory"]["key"] == "dog.name"]
    assert readme_server.api("GET", f"/memories/{first['id']}")["state"] == "superseded"
    assert readme_server.api("GET", f"/memories/{confirmed}")["state"] == "active"


def test_it_shows_an_undone_no_longer_true_as_remembered_in_the_transcript_e1(
    page, readme_server, person, sign_in, look
):
    told = tell(readme_server, person, "My cat's name is Miso.")
    sign_in(page, person)
    card(page, "Cat's name").get_by_role(
        "button", name=re.compile(r"^No longer true: Cat's name$")
    ).click()
    miso = lands_on_card(page, readme_server)

    page.goto(f"{readme_server.url}/conversations/{told['id']}/")
    expect(produced(page, told["message"]).locator(".status")).to_have_text(["no longer true"])

    page.goto(f"{readme_server.url}/memories/no-longer-true/")
    page.locator(f"#m-{miso}").get_by_role("button", name="Undo: it is true (Cat's name)").click()
    again = lands_on_card(page, readme_server)
    expect(page.locator(f"#m-{again} .tag")).to_have_text("Confirmed")

    page.goto(f"{readme_server.url}/conversations/{told['id']}/")
    said = produced(page, told["message"])
    expect(said.locator(".status")).to_have_text([CONFIRMED])
    expect(said).not_to_contain_text("no longer true")
    look(page, "states-02-transcript-undone")
    # The runtime agrees: the retracted record ended, the undo's record is active.
    assert readme_server.api("GET", f"/memories/{miso}")["state"] == "expired"
    assert readme_server.api("GET", f"/memories/{again}")["state"] == "active"


def test_it_shows_the_state_in_the_admin_list_and_filters_by_it_like_the_api_e1(
    page, readme_server, person, look, width
):
    history = readme_server.api(
        "GET", f"/memory/history?user={person.username}&key=basil_plant.name"
    )["results"]
    old = next(r for r in history if r["value"] == "Harbor")
    assert old["status"] == "active"  # corrected, but nothing normalised: the stored status lags

    name, password = f"support-states-{width}", "staff-" + secrets.token_urlsafe(12)
    readme_server.manage("create_support_user", name, f"--password={password}")
    page.goto(f"{readme_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", name)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.goto(f"{readme_server.url}/admin/memory/memoryrecord/?q={person.username}")

    row = page.locator("#result_list tbody tr", has=page.locator(f"input[value='{old['id']}']"))
    expect(row.locator(".memory-state")).to_have_text("superseded")
    expect(page.locator("#result_list thead")).to_contain_text("State")
    expect(page.locator("#result_list thead")).not_to_contain_text("Status")
    look(page, "states-03-admin-state-column", admin=True, fits=False)

    # The API says the same, and the filter finds exactly what `?state=` finds.
    assert readme_server.api("GET", f"/memories/{old['id']}")["state"] == "superseded"
    api_count = readme_server.api("GET", f"/memories?user={person.username}&state=superseded")[
        "count"
    ]
    assert api_count >= 1

    page.get_by_role("link", name="superseded", exact=True).click()
    expect(page).to_have_url(re.compile(r"[?&]state=superseded"))
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(api_count)
    expect(page.locator("#result_list .memory-state")).to_have_text(["superseded"] * api_count)
    expect(page.locator(f"#result_list input[value='{old['id']}']")).to_have_count(1)
    look(page, "states-04-admin-state-filter", admin=True, fits=False)
