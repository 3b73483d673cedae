"""The end user's pages in Debian's Chromium, against the server `make run` starts (DEBUG off,
static files served by WhiteNoise), at 1280 and 390 px; axe-core on every page, a screenshot of
each in test-artifacts/screenshots/ (see conftest.py).

Sign in; correct a memory and see the new value while the old one is gone from the page and
from `POST /memory/resolve`; forget a memory and prove the page, the resolver, a new prompt
plan, the export and a re-extraction from the old message no longer hold it (F5); choose
"Never" for one conversation on the boundaries page and see the card, the page and
`POST /policy/decide` agree (D1–D4); walk every page from the keyboard.
"""

import json
import re
from pathlib import Path

from playwright.sync_api import expect

from .helpers import card, lands_on_card, new_plan, tell


def assert_word_on_one_line(page, word: str) -> None:
    """`word` (each time it appears in the main content) is laid out on one line: values wrap
    between words, never inside one ("Harbo r")."""
    lines = page.evaluate(
        """(word) => {
        const out = [];
        const walker = document.createTreeWalker(
            document.querySelector('main'), NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const node = walker.currentNode;
            let at = node.data.indexOf(word);
            while (at >= 0) {
                const range = document.createRange();
                range.setStart(node, at); range.setEnd(node, at + word.length);
                const tops = new Set([...range.getClientRects()]
                    .filter(r => r.width > 0).map(r => Math.round(r.top)));
                out.push(tops.size);
                at = node.data.indexOf(word, at + 1);
            }
        }
        return out;
    }""",
        word,
    )
    assert lines, f"{word!r} is not on {page.url}"
    assert set(lines) == {1}, f"{word!r} breaks across lines on {page.url}: {lines}"


def test_it_lets_a_user_sign_in_and_correct_a_memory(page, readme_server, person, sign_in, look):
    told = tell(readme_server, person, "My dog's name is Rex.")
    sign_in(page, person, shot="01-sign-in", look=look)
    expect(page.get_by_role("heading", level=1)).to_have_text("What your companion remembers")
    dog = card(page, "Dog's name")
    expect(dog.locator(".memory-value")).to_have_text("Rex")
    expect(dog).to_contain_text("From your message on")
    look(page, "02-memories")

    dog.locator("summary", has_text="Correct").click()
    field = dog.get_by_label("New value for Dog's name")
    expect(field).to_be_focused()
    field.fill("Max")
    look(page, "03-correct-inline")
    dog.get_by_role("button", name="Save correction").click()

    corrected = lands_on_card(page, readme_server)  # at the new card, focused
    expect(page.locator(f"#m-{corrected} .card-notice")).to_contain_text("Corrected “Dog's name”")
    expect(card(page, "Dog's name").locator(".memory-value")).to_have_text("Max")
    expect(page.locator("main")).not_to_contain_text("Rex")
    look(page, "04-memories-after-correct")

    answer = readme_server.api("POST", "/memory/resolve", {"context": told["ctx"]})
    assert [(m["key"], m["value"]) for m in answer["active"] if m["key"] == "dog.name"] == [
        ("dog.name", "Max")
    ]
    assert ("dog.name", "Max", "confirmed") in [
        (p["key"], p["value"], p["certainty"]) for p in answer["prompt"]
    ]
    assert "Rex" not in json.dumps(answer)

    card(page, "Dog's name").get_by_role("link", name="History of Dog's name").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("History of “Dog's name”")
    expect(page.locator("tbody tr")).to_have_count(2)
    expect(page.locator("tr.is-current")).to_contain_text("Max")
    look(page, "05-history")


def test_it_forgets_a_memory_so_that_nothing_holds_it_any_more(
    page, readme_server, person, sign_in, look
):
    told = tell(readme_server, person, "My dog's name is Rex.")
    assert [
        m["value"]
        for m in new_plan(readme_server, told["id"], "before")["memories"]
        if m["key"] == "dog.name"
    ] == ["Rex"]
    sign_in(page, person)

    card(page, "Dog's name").get_by_role("link", name="Forget Dog's name").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Forget “Dog's name”?")
    expect(page.locator("main")).to_contain_text("Old messages will not bring it back.")
    look(page, "06-forget-confirm")
    page.get_by_role("button", name="Forget it").click()

    # The page, back at the forgotten card's place, focused.
    place = lands_on_card(page, readme_server)
    expect(page.locator(f"#m-{place} .card-notice")).to_contain_text("Forgotten: “Dog's name”")
    expect(page.locator("main")).not_to_contain_text("Rex")
    expect(page.locator("main")).to_contain_text("being rushed")  # the demo's other memories stay
    look(page, "07-memories-after-forget")
    page.get_by_role("link", name="Forgotten", exact=True).click()
    expect(page.locator("main")).to_contain_text("Dog's name")
    expect(page.locator("main")).not_to_contain_text("Rex")
    look(page, "08-forgotten")

    # The resolver.
    answer = readme_server.api("POST", "/memory/resolve", {"context": told["ctx"]})
    assert "Rex" not in json.dumps(answer) and "dog.name" not in json.dumps(answer["active"])
    # A new prompt plan: no memory holds it, and the message it was learnt from (still in the
    # transcript) is withheld from the history, listed as forgotten (F6).
    plan = new_plan(readme_server, told["id"], "after")
    assert "Rex" not in json.dumps(plan)
    assert told["message"] not in [m["id"] for m in plan["history"]]
    assert {"kind": "message", "id": told["message"], "reason": "forgotten"} in plan["excluded"]
    # The export, downloaded from the page.
    page.get_by_role("link", name="Your data").click()
    look(page, "09-your-data")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download my data (JSON)").click()
    snapshot = json.loads(Path(download.value.path()).read_text())
    assert snapshot["format"] == "companion-memory/3" and snapshot["user"]["ref"] == person.username
    assert "Rex" not in json.dumps({k: v for k, v in snapshot.items() if k != "messages"})
    # A re-extraction from the old message.
    again = readme_server.api(
        "POST",
        "/memory/remember",
        {"context": told["ctx"], "text": "My dog's name is Rex.", "source": told["message"]},
    )
    assert [(e["outcome"], e["memory"]) for e in again["extracted"]] == [("blocked", None)]
    assert "Rex" not in json.dumps(
        readme_server.api("POST", "/memory/resolve", {"context": told["ctx"]})
    )
    page.goto(readme_server.url + "/memories/")
    expect(page.locator("main")).not_to_contain_text("Rex")

    # The transcript keeps the message and says what became of the memory.
    page.get_by_role("link", name="Conversations").click()
    look(page, "10-conversations")
    page.get_by_role("link", name="A chat with Rowan").click()
    expect(page.locator(f"#m-{told['message']}")).to_contain_text("forgotten on")
    look(page, "11-conversation")


def test_it_shows_never_in_one_conversation_on_the_card_and_the_api_follows(
    page, readme_server, person, sign_in, look
):
    """Choose "Never" only in one conversation and save: the card shows that
    choice where it applies, Where keeps the conversation, and the runtime is told the same."""
    sign_in(page, person)
    page.get_by_role("link", name="Boundaries").click()
    expect(page.get_by_role("heading", level=2).first).to_have_text("Your choices")
    images = page.locator("#card-night-caretaker-media-image")
    expect(images.locator(".decision")).to_have_text(["Asks you first"])
    # The demo's own conversation-level answer is on its card too.
    playful = page.locator("#card-night-caretaker-tone-playful")
    expect(playful.locator(".applies li").nth(1)).to_contain_text(
        "In “The rooftop greenhouse”: Allowed"
    )
    look(page, "12-boundaries")

    images.locator("summary").click()
    images.get_by_label("Choice for images").select_option(label="Never")
    where = images.get_by_label("Where for images")
    where.select_option(label="only in “The rooftop greenhouse”")
    conversation = where.input_value().removeprefix("conversation:")
    look(page, "13-boundaries-choosing")
    images.get_by_role("button", name=re.compile("^Save")).click()

    expect(page.locator(".messages")).to_contain_text(
        "Saved: Images — never, only in “The rooftop greenhouse” with The Night Caretaker."
    )
    images = page.locator("#card-night-caretaker-media-image")
    expect(images).to_be_in_viewport()
    expect(images.locator(".applies li")).to_have_text(
        [
            re.compile(r"^Elsewhere with The Night Caretaker: Asks you first"),
            re.compile(
                r"^In “The rooftop greenhouse”: Not allowed You decided: never, only in “The "
                r"rooftop greenhouse”"
            ),
        ]
    )
    expect(images.get_by_label("Where for images")).to_have_value(f"conversation:{conversation}")
    expect(images.get_by_label("Choice for images")).to_have_value("deny")
    yours = page.locator("section", has=page.get_by_role("heading", name="Your choices"))
    expect(yours).to_contain_text(
        "Never, only in “The rooftop greenhouse” with The Night Caretaker"
    )
    look(page, "14-boundaries-after-set")

    def decide(**extra):
        body = {
            "context": {"user": person.username, "character": "night-caretaker", **extra},
            "capability": "media.image",
            "requested_by": "assistant",
        }
        return readme_server.api("POST", "/policy/decide", body)

    decided = decide(conversation=conversation)
    assert (decided["effect"], decided["reason"]) == ("deny", "explicit-rule")
    assert decide()["effect"] == "ask"

    # Removing the choice: the card and the API ask again.
    yours.get_by_role("button", name=re.compile("^Remove this choice for images")).click()
    expect(page.locator(".messages")).to_contain_text("Removed your choice for Images")
    expect(page.locator("#card-night-caretaker-media-image .decision")).to_have_text(
        ["Asks you first"]
    )
    assert decide(conversation=conversation)["effect"] == "ask"


def test_it_makes_every_page_read_well_and_work_from_the_keyboard(
    page, readme_server, person, sign_in, look, width
):
    told = tell(readme_server, person, "My dog's name is Rex.")
    sign_in(page, person)
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(readme_server.url + "/memories/#main")

    # A bad correction comes back with its error, focused, and nothing changes.
    page.goto(readme_server.url + "/memories/")
    card(page, "Dog's name").get_by_role("link", name="History of Dog's name").click()
    history = page.url
    page.get_by_role("link", name="Correct").click()
    look(page, "15-correct")
    page.get_by_label("New value").fill("   ")
    page.get_by_role("button", name="Save correction").click()
    expect(page.locator(".error-summary")).to_be_focused()
    expect(page.locator(".error-summary")).to_contain_text("Write the correct value")
    look(page, "16-correct-with-error")

    # Values wrap between words, never inside one: the basil plant's old name.
    page.goto(readme_server.url + "/memories/")
    page.locator("li.memory", has_text="Marlowe").get_by_role(
        "link", name=re.compile("^History of")
    ).click()
    expect(page.locator("main")).to_contain_text("Harbor")
    assert_word_on_one_line(page, "Harbor")
    look(page, "17-history-of-a-correction")
    assert (
        page.evaluate("getComputedStyle(document.querySelector('.memory-value')).overflowWrap")
        != "anywhere"
    )

    for path, name in [
        (history, "18-history"),
        ("/data/forget-everything", "19-forget-everything"),
        ("/data/delete-account", "20-delete-account"),
        (f"/conversations/{told['id']}/delete", "21-delete-conversation"),
        ("/memories/forgotten/", "22-forgotten"),
        ("/conversations/", "23-conversations"),
        ("/data/", "24-your-data"),
    ]:
        page.goto(path if path.startswith("http") else readme_server.url + path)
        expect(page.locator("main h1")).to_be_visible()
        look(page, name)
    page.goto(readme_server.url + "/conversations/")
    page.get_by_role("link", name="The rooftop greenhouse").click()
    look(page, "25-transcript")
