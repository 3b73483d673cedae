"""Support staff in the admin, in a real browser (issue 6): the system Chromium driven by
Playwright against `live_server`.

A member of the Support group signs in to the admin, finds a user's memory by username (its
value is hidden from them), forgets it on the user's behalf with a reason, and the runtime's
`POST /api/v1/memory/resolve` no longer returns it (F5). The explain view then shows it as
excluded, `forgotten`. Screenshots go to test-artifacts/screenshots/.
"""

import json
import os
import shutil
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
PASSWORD = "correct horse battery"
VALUE = "Marlowe-private-xyz"
REASON = "Ticket 4711: the user asked us to forget their plant's name."

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary: neither /usr/bin/chromium nor `chromium` on PATH"),
]


@pytest.fixture(scope="module", autouse=True)
def _allow_orm_beside_playwright():
    """Playwright's sync API runs an event loop in this thread; Django refuses ORM calls from a
    thread with a running loop unless told that this is deliberate. Set for this module only
    (set at import, it would leak into every later test, e.g. a `check --deploy` subprocess)."""
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if before is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture(scope="module")
def admin_browser(_allow_orm_beside_playwright):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def admin_page(admin_browser):
    context = admin_browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors


def shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"admin-{name}.png"), full_page=True)


def resolve(base_url, token, context):
    request = urllib.request.Request(
        f"{base_url}/api/v1/memory/resolve", data=json.dumps({"context": context}).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        return json.loads(response.read())


def test_support_staff_forget_a_memory_on_the_users_behalf(live_server, admin_page):
    from config.models import ApiToken
    from memory.domain import Scope
    from memory.models import MemoryRecord, Tombstone
    from memory.services import memory_assert
    from support.models import SupportAction
    from support.services import support_group_ensure
    from tests.factories import UserFactory

    # The flush between transactional tests drops the group the data migration made.
    group = support_group_ensure()
    staff = UserFactory(username="support-alex", is_staff=True)
    staff.groups.add(group)
    sam = UserFactory(username="sam")
    plant = memory_assert(user=sam, key="basil_plant.name", value=VALUE, scope=Scope("user"),
                          authority="user-confirmed").record
    memory_assert(user=sam, key="user.likes", value="jazz", scope=Scope("user"), authority="user-confirmed")
    _, token = ApiToken.issue("browser-test-runtime")
    before = resolve(live_server.url, token, {"user": "sam"})
    assert plant.id in {m["id"] for m in before["active"]}

    page = admin_page
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "support-alex")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#support-tools")
    shot(page, "01-index")

    # Find sam's memories: the key is there, the value is not.
    page.click("a[href='/admin/memory/memoryrecord/']")
    page.wait_for_selector("#searchbar")
    page.fill("#searchbar", "sam")
    page.press("#searchbar", "Enter")
    page.wait_for_selector("#result_list")
    assert "basil_plant.name" in page.content()
    assert VALUE not in page.content()
    assert page.locator("#result_list .private-masked").count() >= 1
    shot(page, "02-memories-masked")

    # Forget it on sam's behalf: select the row, pick the action, give a reason.
    page.check(f"input[name=_selected_action][value='{plant.id}']")
    page.select_option("select[name=action]", "forget_on_behalf")
    page.click("button[name=index]")
    page.wait_for_selector("#support-action-form")
    assert VALUE not in page.content()
    shot(page, "03-forget-confirm")
    page.fill("textarea[name=reason]", REASON)
    page.click("input[name=_apply]")
    page.wait_for_selector(".messagelist .success")
    assert "1 done" in page.inner_text(".messagelist")
    shot(page, "04-forgotten")

    # The resolver no longer has it; the explain view says why.
    after = resolve(live_server.url, token, {"user": "sam"})
    assert plant.id not in {m["id"] for m in after["active"]}
    assert {"id": plant.id, "reason": "forgotten"} in after["excluded"]
    assert VALUE not in json.dumps(after)
    page.goto(f"{live_server.url}/admin/support/explain/?user=sam")
    row = page.locator(f"tr[data-record='{plant.id}']")
    assert "forgotten" in row.inner_text()
    shot(page, "05-explain")

    record = MemoryRecord.objects.get(pk=plant.id)
    assert (record.status, record.value) == ("forgotten", "")
    assert Tombstone.objects.filter(user=sam, key="basil_plant.name").exists()
    logged = SupportAction.objects.get()
    assert (logged.action, logged.reason, logged.staff_id) == ("forget", REASON, staff.pk)
