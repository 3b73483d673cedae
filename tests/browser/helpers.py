"""What the browser tests share besides fixtures: the chat runtime's calls that set a scene
(`tell`), a memory card by its label (`card`), a new prompt plan (`new_plan`), where the focus
is (`focused_id`), the card an address names (`anchored_id`), an action that came back to
its card (`lands_on_card`), and what the runtime reads back (`resolve`, `active_values`,
`history_of`) beside what the page shows (`no_longer_true`, `card_labels`)."""

from __future__ import annotations

import re
import secrets

from playwright.sync_api import expect

ROWAN = {"name": "Captain Rowan"}
ANCHOR = re.compile(r"#m-([0-9a-f-]{36})$")
CARD_AT = r"/memories/(\?[^#]*)?#m-[0-9a-f-]{36}$"


def tell(server, who, text: str, *, title: str = "A chat with Rowan") -> dict:
    """The chat runtime: a conversation with Captain Rowan in which `who` says `text`."""
    server.api("PUT", "/characters/captain-rowan", ROWAN)
    conversation = server.api(
        "POST",
        "/conversations",
        {"user": who.username, "character": "captain-rowan", "title": title},
    )
    turn = server.api(
        "POST", f"/conversations/{conversation['id']}/turns", {"turn_key": "t1", "content": text}
    )
    return {
        "id": conversation["id"],
        "message": turn["user_message"]["id"],
        "extracted": turn["extracted"],
        "ctx": {
            "user": who.username,
            "character": "captain-rowan",
            "conversation": conversation["id"],
        },
    }


def card(page, label):
    """The memory card (or a card's place) headed `label` on the memories page."""
    return page.locator("li.memory", has=page.get_by_role("heading", name=label, exact=True))


def new_plan(server, conversation_id, key, content: str = "What is my dog called?"):
    """A new turn in the conversation and its prompt plan, as the runtime asks for it."""
    turn = server.api(
        "POST", f"/conversations/{conversation_id}/turns", {"turn_key": key, "content": content}
    )
    return server.api("GET", f"/turns/{turn['id']}/prompt-plan?budget=4000")


def focused_id(page) -> str:
    """The id of the element that has the keyboard focus ("" for none)."""
    return page.evaluate("document.activeElement ? document.activeElement.id : ''")


def anchored_id(page) -> str:
    """The memory id the address ends in (`…#m-<id>`); fails when it ends in none."""
    found = ANCHOR.search(page.url)
    assert found, f"{page.url} does not end in a card's anchor"
    return found.group(1)


def lands_on_card(page, server) -> str:
    """The page came back at a card (its address ends in `#m-<id>`) and that card has the
    focus; the card's memory id."""
    expect(page).to_have_url(re.compile(re.escape(server.url) + CARD_AT))
    memory_id = anchored_id(page)
    expect(page.locator(f"#m-{memory_id}")).to_be_focused()
    assert focused_id(page) == f"m-{memory_id}"
    return memory_id


def support_staff(server, name: str, *, private_text: bool = False) -> tuple[str, str]:
    """A support member made with the README's command (with the private-text permission when
    asked): their name and password."""
    password = "staff-" + secrets.token_urlsafe(12)
    server.manage(
        "create_support_user",
        name,
        f"--password={password}",
        *(["--private-text"] if private_text else []),
    )
    return name, password


def admin_sign_in(page, server, who: tuple[str, str]) -> None:
    """Sign `who` in to the admin, landing on its index with the support tools."""
    page.goto(f"{server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", who[0])
    page.fill("#id_password", who[1])
    page.click("input[type=submit]")
    expect(page.locator("#support-tools")).to_be_visible()


def resolve(server, who, **context) -> dict:
    return server.api("POST", "/memory/resolve", {"context": {"user": who.username, **context}})


def active_values(answer: dict, key: str) -> list[tuple[str, str]]:
    return [(m["value"], m["authority"]) for m in answer["active"] if m["key"] == key]


def history_of(server, who, key: str) -> list[dict]:
    answer = server.api("GET", f"/memory/history?user={who.username}&key={key}")
    return answer["results"] if isinstance(answer, dict) else answer


def no_longer_true(label: str) -> re.Pattern:
    """The "No longer true" button's accessible name, exactly as a screen reader says it."""
    return re.compile(rf"^No longer true: {re.escape(label)}$")


def card_labels(page) -> list[str]:
    return page.locator("li.memory h3.memory-label").all_inner_texts()
