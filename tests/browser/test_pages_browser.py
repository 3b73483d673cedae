"""The end user's pages in a real browser (issue 5): the system Chromium driven by Playwright
against `live_server`.

Sign in; correct a memory and see the new value while the old one is gone from the page and
from `POST /memory/resolve`; forget a memory and prove the page, the resolver, a new prompt
plan, the export and a re-extraction from the old message no longer hold it (F5); set a
boundary and see `POST /policy/decide` follow it. Every page is saved as a screenshot in
test-artifacts/screenshots/.
"""

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django refuses ORM calls from a
# thread with a running loop unless told that this is deliberate (tests only).
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
PASSWORD = "correct horse battery"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium: neither /usr/bin/chromium nor `chromium` on PATH"),
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors


@pytest.fixture
def catalog(db):
    """The seeded catalog (key labels, capabilities, the defaults' policy version). A live-server
    test flushes every table when it ends, and `serialized_rollback` cannot bring the seeds back
    here: once Playwright's loop runs, Django hands this thread fresh connection objects without
    the serialized copy. So the data migrations' own seed functions run again (idempotent)."""
    from tests.helpers import reseed_catalog

    reseed_catalog()


@pytest.fixture
def world(catalog):
    """sam, who told Captain Rowan about their dog and where they live."""
    from conversations.services import turn_create
    from tests.factories import CharacterFactory, ConversationFactory, UserFactory

    sam = UserFactory(username="sam", password=PASSWORD)
    rowan = CharacterFactory(slug="captain-rowan", name="Captain Rowan")
    conv = ConversationFactory(user=sam, character=rowan, title="Rooftop greenhouse")
    turn = turn_create(conversation_id=conv.pk, turn_key="t1", content="My dog's name is Rex. I live in Boston.").turn
    return {"sam": sam, "conv": conv, "message": str(turn.user_message_id),
            "ctx": {"user": "sam", "character": "captain-rowan", "conversation": str(conv.pk)}}


@pytest.fixture
def api(live_server, db):
    """The chat runtime's view: JSON over HTTP against the live server, with a Bearer token."""
    from config.models import ApiToken

    _, token = ApiToken.issue("browser")

    def call(method, path, body=None):
        request = urllib.request.Request(
            live_server.url + "/api/v1" + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    return call


def shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def sign_in(page, live_server, *, save=False):
    from playwright.sync_api import expect

    page.goto(live_server.url + "/memories/")
    expect(page).to_have_url(live_server.url + "/login/?next=/memories/")
    page.get_by_label("Username").fill("sam")
    page.get_by_label("Password").fill(PASSWORD)
    if save:
        shot(page, "01-sign-in")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(live_server.url + "/memories/")
    expect(page.get_by_role("heading", level=1)).to_have_text("What your companion remembers")


def card(page, label):
    return page.locator("li.memory", has=page.get_by_role("heading", name=label, exact=True))


def new_plan(api, conv, key):
    turn = api("POST", f"/conversations/{conv.pk}/turns", {"turn_key": key, "content": "What is my dog called?"})
    return api("GET", f"/turns/{turn['id']}/prompt-plan?budget=4000")


def test_sign_in_and_correct_a_memory(page, live_server, world, api):
    from playwright.sync_api import expect

    sign_in(page, live_server, save=True)
    dog = card(page, "Dog's name")
    expect(dog.locator(".memory-value")).to_have_text("Rex")
    expect(dog).to_contain_text("From your message on")
    shot(page, "02-memories")

    dog.locator("summary", has_text="Correct").click()
    field = dog.get_by_label("New value for Dog's name")
    expect(field).to_be_focused()
    field.fill("Max")
    shot(page, "03-correct-inline")
    dog.get_by_role("button", name="Save correction").click()

    expect(page.locator(".messages")).to_contain_text("Corrected “Dog's name”")
    expect(card(page, "Dog's name").locator(".memory-value")).to_have_text("Max")
    expect(page.locator("main")).not_to_contain_text("Rex")
    shot(page, "04-memories-after-correct")

    answer = api("POST", "/memory/resolve", {"context": world["ctx"]})
    assert [(m["key"], m["value"]) for m in answer["active"] if m["key"] == "dog.name"] == [("dog.name", "Max")]
    assert ("dog.name", "Max", "confirmed") in [(p["key"], p["value"], p["certainty"]) for p in answer["prompt"]]
    assert "Rex" not in json.dumps(answer)

    card(page, "Dog's name").get_by_role("link", name="History of Dog's name").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("History of “Dog's name”")
    expect(page.locator("tbody tr")).to_have_count(2)
    expect(page.locator("tr.is-current")).to_contain_text("Max")
    shot(page, "05-history")


def test_forget_a_memory_and_nothing_holds_it_any_more(page, live_server, world, api):
    from playwright.sync_api import expect

    assert [m["value"] for m in new_plan(api, world["conv"], "before")["memories"] if m["key"] == "dog.name"] == ["Rex"]
    sign_in(page, live_server)

    card(page, "Dog's name").get_by_role("link", name="Forget Dog's name").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Forget “Dog's name”?")
    expect(page.locator("main")).to_contain_text("Old messages will not bring it back.")
    shot(page, "06-forget-confirm")
    page.get_by_role("button", name="Forget it").click()

    # The page, back at the forgotten card's place (issue 13, item 8).
    expect(page).to_have_url(re.compile(re.escape(live_server.url + "/memories/#m-") + "[0-9a-f-]{36}$"))
    expect(page.locator(".messages")).to_contain_text("Forgotten: “Dog's name”")
    expect(page.locator("main")).not_to_contain_text("Rex")
    expect(card(page, "Lives in")).to_contain_text("Boston")
    shot(page, "07-memories-after-forget")
    page.get_by_role("link", name="Forgotten", exact=True).click()
    expect(page.locator("main")).to_contain_text("Dog's name")
    expect(page.locator("main")).not_to_contain_text("Rex")
    shot(page, "08-forgotten")

    # The resolver.
    answer = api("POST", "/memory/resolve", {"context": world["ctx"]})
    assert "Rex" not in json.dumps(answer) and "dog.name" not in json.dumps(answer["active"])
    # A new prompt plan: no memory holds it; only the old message, still in the transcript, quotes it.
    plan = new_plan(api, world["conv"], "after")
    assert "Rex" not in json.dumps(plan["memories"]) and "Rex" not in json.dumps(plan["excluded"])
    assert [m["id"] for m in plan["history"] if "Rex" in m["content"]] == [world["message"]]
    # The export, downloaded from the page.
    page.get_by_role("link", name="Your data").click()
    shot(page, "09-your-data")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download my data (JSON)").click()
    snapshot = json.loads(Path(download.value.path()).read_text())
    assert snapshot["format"] == "companion-memory/1" and snapshot["user"]["ref"] == "sam"
    assert "Rex" not in json.dumps({k: v for k, v in snapshot.items() if k != "messages"})
    # A re-extraction from the old message.
    again = api("POST", "/memory/remember", {"context": world["ctx"], "text": "My dog's name is Rex.",
                                             "source": world["message"]})
    assert [(e["outcome"], e["memory"]) for e in again["extracted"]] == [("blocked", None)]
    assert "Rex" not in json.dumps(api("POST", "/memory/resolve", {"context": world["ctx"]}))
    page.goto(live_server.url + "/memories/")
    expect(page.locator("main")).not_to_contain_text("Rex")

    # The transcript keeps the message and says what became of the memory.
    page.get_by_role("link", name="Conversations").click()
    shot(page, "10-conversations")
    page.get_by_role("link", name="Rooftop greenhouse").click()
    expect(page.locator(f"#m-{world['message']}")).to_contain_text("forgotten on")
    shot(page, "11-conversation")


def test_set_a_boundary_and_the_api_follows(page, live_server, world, api):
    from playwright.sync_api import expect

    decide = {"context": world["ctx"], "capability": "media.image", "requested_by": "assistant"}
    assert api("POST", "/policy/decide", decide)["effect"] == "ask"
    sign_in(page, live_server)
    page.get_by_role("link", name="Boundaries").click()
    rowan = page.locator("section", has=page.get_by_role("heading", name="With Captain Rowan", exact=True))
    images = rowan.locator("li.capability", has=page.get_by_role("heading", name="Images", exact=True))
    expect(images.locator(".decision")).to_have_text("Asks you first")
    shot(page, "12-boundaries")

    images.get_by_label("Choice for images").select_option(label="Never")
    images.get_by_label("Where").select_option(label="with Captain Rowan")
    images.get_by_role("button", name="Save").click()

    expect(page.locator(".messages")).to_contain_text("Saved: Images — never, with Captain Rowan.")
    images = page.locator("section", has=page.get_by_role("heading", name="With Captain Rowan", exact=True)).locator(
        "li.capability", has=page.get_by_role("heading", name="Images", exact=True))
    expect(images.locator(".decision")).to_have_text("Not allowed")
    expect(images).to_contain_text("You decided: never, with Captain Rowan.")
    shot(page, "13-boundaries-after-set")
    decided = api("POST", "/policy/decide", decide)
    assert (decided["effect"], decided["reason"]) == ("deny", "explicit-rule")

    # Removing the choice: the API asks again.
    page.get_by_role("button", name="Remove this choice for images").click()
    expect(page.locator(".messages")).to_contain_text("Removed your choice for Images")
    assert api("POST", "/policy/decide", decide)["effect"] == "ask"


def test_every_page_reads_well_and_works_from_the_keyboard(page, live_server, world):
    from playwright.sync_api import expect

    sign_in(page, live_server)
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(live_server.url + "/memories/#main")

    # A bad correction comes back with its error, focused, and nothing changes.
    page.goto(live_server.url + "/memories/")
    card(page, "Dog's name").get_by_role("link", name="History of Dog's name").click()
    page.get_by_role("link", name="Correct").click()
    page.get_by_label("New value").fill("   ")
    page.get_by_role("button", name="Save correction").click()
    expect(page.locator(".error-summary")).to_be_focused()
    expect(page.locator(".error-summary")).to_contain_text("Write the correct value")
    shot(page, "14-correct-with-error")

    for path, name in [
        ("/data/forget-everything", "15-forget-everything"),
        ("/data/delete-account", "16-delete-account"),
        (f"/conversations/{world['conv'].pk}/delete", "17-delete-conversation"),
    ]:
        page.goto(live_server.url + path)
        expect(page.locator("main h1")).to_be_visible()
        shot(page, name)
