"""Support staff in the admin, in Debian's Chromium, against the server `make run` starts
(see conftest.py), at 1280 and 390 px. Staff accounts come from
`manage.py create_support_user` (the Support group, no private-text permission).

- Forget on the user's behalf: find a user's memory by username (its value hidden), forget it
  with a reason, and the runtime's `POST /memory/resolve` no longer returns it (F5); the
  explain view shows it excluded as forgotten, in words; the reason is in the support log.
- "Why did the companion say that?": from a turn, one click opens the
  explain view pre-filled with its conversation, scene and plan time; the turn's stored plan
  reads as keys and labels with values hidden; every reason is in words; the page fits 1280 px.
  The same click exists from a message and from a memory.
"""

import json
import re

from playwright.sync_api import expect

from tests.browser.helpers import admin_sign_in, support_staff

REASON = "Ticket 4711: the user asked us to forget their plant's name."


def active(server, username: str) -> dict:
    answer = server.api("POST", "/memory/resolve", {"context": {"user": username}})
    return {m["key"]: m for m in answer["active"]}


def test_it_lets_support_staff_forget_a_memory_on_the_users_behalf(
    page, readme_server, person, look, width
):
    staff = support_staff(readme_server, f"support-forget-{width}")
    plant = active(readme_server, person.username)["basil_plant.name"]
    assert plant["value"] == "Marlowe"

    admin_sign_in(page, readme_server, staff)
    look(page, "admin-01-index", admin=True, fits=False)

    # Find the user's memories: the key is there, the value is not.
    page.click("a[href='/admin/memory/memoryrecord/']")
    page.fill("#searchbar", person.username)
    page.press("#searchbar", "Enter")
    expect(page.locator("#result_list")).to_contain_text("basil_plant.name")
    assert "Marlowe" not in page.content()
    assert page.locator("#result_list .private-masked").count() >= 1
    look(page, "admin-02-memories-masked", admin=True, fits=False)

    # Forget it on the user's behalf: select the row, pick the action, give a reason.
    page.check(f"input[name=_selected_action][value='{plant['id']}']")
    page.select_option("select[name=action]", "forget_on_behalf")
    page.click("button[name=index]")
    expect(page.locator("#support-action-form")).to_be_visible()
    assert "Marlowe" not in page.content()
    look(page, "admin-03-forget-confirm", admin=True, fits=False)
    page.fill("textarea[name=reason]", REASON)
    page.click("input[name=_apply]")
    expect(page.locator(".messagelist .success")).to_contain_text("1 done")
    look(page, "admin-04-forgotten", admin=True, fits=False)

    # The resolver no longer has it; the explain view says why, in words.
    answer = readme_server.api("POST", "/memory/resolve", {"context": {"user": person.username}})
    assert plant["id"] not in {m["id"] for m in answer["active"]}
    assert {"id": plant["id"], "reason": "forgotten"} in answer["excluded"]
    assert "Marlowe" not in json.dumps(answer)
    page.goto(f"{readme_server.url}/admin/support/explain/?user={person.username}")
    row = page.locator(f"tr[data-record='{plant['id']}']")
    expect(row).to_contain_text("Forgotten by support, on the user's behalf, on ")
    look(page, "admin-05-explain", admin=True, fits=width >= 1280)

    # The reason is in the support log, under the staff member's name.
    page.goto(f"{readme_server.url}/admin/support/supportaction/?q={staff[0]}")
    expect(page.locator("#result_list")).to_contain_text(REASON)


def test_it_lets_support_explain_a_turn_in_one_click(page, readme_server, person, look, width):
    staff = support_staff(readme_server, f"support-explain-{width}")
    admin_sign_in(page, readme_server, staff)

    # From the list of turns: the user's turns in the greenhouse scene.
    page.goto(f"{readme_server.url}/admin/conversations/turn/?q={person.username}")
    turn = page.locator("#result_list tbody tr", has_text="greenhouse").first
    turn.get_by_role("link", name="Explain").click()

    expect(page.get_by_role("heading", name="Explain a context")).to_be_visible()
    expect(page.locator("#id_user")).to_have_value(person.username)
    expect(page.locator("#id_conversation")).to_have_value(re.compile(r"^[0-9a-f-]{36}$"))
    expect(page.locator("#id_scene")).to_have_value("greenhouse")
    expect(page.locator("#id_now")).to_have_value(re.compile(r"^\d{4}-\d{2}-\d{2}"))
    expect(page.locator("#id_turn")).to_have_value(re.compile(r"^[0-9a-f-]{36}$"))

    # The stored plan: keys and labels, values hidden; reasons in words.
    plan = page.locator("#plan-snapshot")
    expect(plan.locator("table.plan-memories")).to_contain_text("basil_plant.name")
    expect(plan.locator("table.plan-memories")).to_contain_text("Basil plant's name")
    expect(plan.locator("table.plan-memories .private-masked").first).to_be_visible()
    records = page.locator("#explain-records")
    expect(records).to_contain_text("Used: the current value for this key here.")
    assert "Harbor" not in page.content() and "Marlowe" not in page.content()
    look(page, "admin-06-explain-a-turn", admin=True, fits=width >= 1280)

    # The turn's own page reads its plan back the same way.
    turn_id = page.locator("#id_turn").input_value()
    page.locator(f"a[href$='/conversations/turn/{turn_id}/change/']").first.click()
    expect(page.locator("#plan-title")).to_have_text("The prompt plan this turn stored")
    expect(page.locator("#plan-snapshot table.plan-memories")).to_contain_text("Basil plant's name")
    look(page, "admin-07-turn", admin=True, fits=width >= 1280)

    # From a message: its turn, one click.
    page.goto(f"{readme_server.url}/admin/conversations/message/?q={person.username}")
    page.locator("#result_list tbody tr").first.get_by_role("link", name="Explain").click()
    expect(page.locator("#plan-snapshot")).to_be_visible()

    # From a memory: the turn that taught it, one click.
    page.goto(f"{readme_server.url}/admin/memory/memoryrecord/?q={person.username}")
    page.locator("#result_list tbody tr", has_text="user.dislikes").first.locator(
        "th a"
    ).first.click()
    page.get_by_role("link", name=re.compile("^Explain turn .* that taught it")).first.click()
    expect(page.locator("#id_scene")).to_have_value("greenhouse")
    expect(page.locator("#explain-records")).to_contain_text("user.dislikes")
