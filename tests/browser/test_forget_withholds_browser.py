"""SPEC F6 as a person meets it, against the server `make run` starts: the forget page says
beforehand how many messages the companion will stop seeing, the success message repeats the
count, the transcript keeps the words with a notice naming the forget (never the value), and
the next prompt plan the runtime asks for holds none of them."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from .helpers import new_plan, tell


def test_it_forgets_on_the_page_and_the_next_plan_reads_none_of_the_words(
    page, readme_server, person, sign_in, look
):
    said = tell(readme_server, person, "My cat is called Miso.", title="About my cat")
    conversation = said["id"]
    [learnt] = said["extracted"]
    readme_server.api(
        "POST",
        f"/turns/{_turn_of(readme_server, conversation)}/reply",
        {"content": "Miso is a lovely name for a cat!"},
    )
    readme_server.api(
        "POST",
        f"/conversations/{conversation}/turns",
        {"turn_key": "t2", "content": "Actually my cat is called Pixel."},
    )

    sign_in(page, person)
    page.goto(f"{readme_server.url}/memories/{learnt['memory']['id']}/forget")
    heading = page.get_by_role("heading", level=1)
    label = re.fullmatch(r"Forget “(.+)”\?", heading.inner_text()).group(1)
    expect(page.locator("main")).to_contain_text(
        "It will also stop seeing 3 messages that mention it or that it was learnt from."
    )
    look(page, "f6-01-forget-page")
    page.get_by_role("button", name="Forget it").click()

    expect(page.locator("main")).to_contain_text(
        f"Forgotten: “{label}” (everywhere). The value is erased, the companion no longer sees "
        "the 3 messages that held it, and old messages will not bring it back."
    )
    look(page, "f6-02-forgotten")

    page.goto(f"{readme_server.url}/conversations/{conversation}/")
    notices = page.locator(".withheld-notice")
    expect(notices).to_have_count(3)
    expect(notices.first).to_contain_text(
        f"The companion no longer sees this message, because it was asked to forget “{label}” on "
    )
    for value in ("Miso", "Pixel"):
        expect(notices.first).not_to_contain_text(value)
    expect(page.locator(".transcript")).to_contain_text("My cat is called Miso.")  # the words stay
    look(page, "f6-03-transcript")

    plan = new_plan(readme_server, conversation, "t3", "How are you today?")
    assert plan["history"] == []
    held = {
        e["id"] for e in plan["excluded"] if e["kind"] == "message" and e["reason"] == "forgotten"
    }
    assert len(held) == 3 and said["message"] in held
    assert "Miso" not in str(plan) and "Pixel" not in str(plan)


def _turn_of(server, conversation: str) -> str:
    """The turn `tell` made (its key is t1): created again with the same key and content, the
    API answers the same turn (I4)."""
    again = server.api(
        "POST",
        f"/conversations/{conversation}/turns",
        {"turn_key": "t1", "content": "My cat is called Miso."},
    )
    return again["id"]
