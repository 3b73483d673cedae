"""The person's settings as the memory pages show them, in Debian's Chromium against the server
`make run` starts (see conftest.py), at 1280 and 390 px, with `look()` on every page visited:
the time zone on "Your data" names the times on the memories and history pages; the memory
switches (I8): "Use memories in conversations" off empties the next prompt plan."""

from __future__ import annotations

from datetime import datetime, timedelta

from playwright.sync_api import expect

from .helpers import (
    active_values,
    card,
    new_plan,
    resolve,
    tell,
)


def first_from(page) -> datetime:
    return datetime.strptime(
        page.locator("table.history td[data-label=From]").first.inner_text(), "%d %b %Y, %H:%M"
    )


def test_it_shows_times_in_the_time_zone_the_person_chooses(
    page, readme_server, person, sign_in, look
):
    """Times on every page are in the person's time zone once chosen on "Your data" (unset:
    the service's, named as such); the export carries the choice."""
    sign_in(page, person)
    expect(page.locator(".time-zone-note")).to_have_text(
        "Times are in UTC, the service's time zone. Change it."
    )
    history = card(page, "Basil plant's name").get_by_role(
        "link", name="History of Basil plant's name"
    )
    history.click()
    history_url = page.url
    utc = first_from(page)

    page.get_by_role("link", name="Change it").click()
    expect(page).to_have_url(readme_server.url + "/data/#time-zone")
    zone = page.locator("#time-zone")
    expect(zone).to_contain_text(
        "Every page shows dates and times in UTC, the service's time zone, until you choose yours."
    )
    page.get_by_role("combobox", name="Your time zone").select_option("Asia/Tokyo")
    page.locator("#time-zone-save").click()

    expect(page).to_have_url(readme_server.url + "/data/#time-zone")
    expect(zone).to_be_focused()
    expect(zone.locator(".card-notice")).to_have_text("Times are now shown in Tokyo (Asia).")
    expect(zone).to_contain_text("Every page shows dates and times in your time zone, Asia/Tokyo.")
    expect(page.get_by_role("combobox", name="Your time zone")).to_have_value("Asia/Tokyo")
    look(page, "flows-18-time-zone-saved")

    page.get_by_role("link", name="Memories", exact=True).click()
    expect(page.locator(".time-zone-note")).to_have_text(
        "Times are in your time zone, Asia/Tokyo. Change it."
    )
    page.goto(history_url)
    expect(page.locator(".time-zone-note")).to_have_text(
        "Times are in your time zone, Asia/Tokyo. Change it."
    )
    assert first_from(page) - utc == timedelta(hours=9)  # Tokyo keeps no summer time
    look(page, "flows-19-history-in-tokyo")

    snapshot = readme_server.api("GET", f"/users/{person.username}/export")
    assert snapshot["user"]["time_zone"] == "Asia/Tokyo"


def test_it_stops_using_memories_in_conversations_when_switched_off(
    page, readme_server, person, sign_in, look
):
    """I8: with "Use memories in conversations" off, the next prompt plan has no memories and
    excludes each as `memory-off`; nothing is deleted; switched on again, they are back."""
    told = tell(readme_server, person, "My dog's name is Rex.")
    rex = [e["memory"]["id"] for e in told["extracted"] if e["memory"]["key"] == "dog.name"]
    assert len(rex) == 1
    used = new_plan(readme_server, told["id"], "on")["memories"]
    assert [m["value"] for m in used if m["key"] == "dog.name"] == ["Rex"]
    sign_in(page, person)
    switches = page.locator("#switches")
    expect(switches.get_by_label("Use memories in conversations")).to_be_checked()

    switches.get_by_label("Use memories in conversations").uncheck()
    page.locator("#switches-save").click()
    expect(page).to_have_url(readme_server.url + "/memories/#switches")
    expect(switches).to_be_focused()
    expect(switches.locator(".card-notice")).to_have_text(
        "Saved: the companion learns from your messages and uses none of these memories in "
        "conversations. "
        "Nothing was deleted."
    )
    expect(switches.get_by_label("Use memories in conversations")).not_to_be_checked()
    expect(switches.get_by_label("Learn from my messages")).to_be_checked()
    expect(card(page, "Dog's name").locator(".memory-value")).to_have_text("Rex")  # nothing deleted
    look(page, "flows-20-memories-off")

    settings = readme_server.api("GET", f"/users/{person.username}/memory-settings")
    assert (settings["learn"], settings["use"], settings["changed_by"]) == (True, False, "user")
    plan = new_plan(readme_server, told["id"], "off")
    assert plan["memories"] == []
    off = [
        e["id"] for e in plan["excluded"] if e["kind"] == "memory" and e["reason"] == "memory-off"
    ]
    assert len(off) == len(used) and set(rex) <= set(
        off
    )  # each memory the plan used, and only those
    answer = resolve(readme_server, person, **{k: v for k, v in told["ctx"].items() if k != "user"})
    assert answer["prompt"] == [] and active_values(answer, "dog.name") == [
        ("Rex", "rule-extracted")
    ]

    switches.get_by_label("Use memories in conversations").check()
    page.locator("#switches-save").click()
    expect(switches).to_be_focused()
    expect(switches.locator(".card-notice")).to_have_text(
        "Saved: the companion learns from your messages and uses these memories in conversations."
    )
    plan = new_plan(readme_server, told["id"], "on-again")
    assert [m["value"] for m in plan["memories"] if m["key"] == "dog.name"] == ["Rex"]
    assert len(plan["memories"]) == len(used)
    assert "memory-off" not in {e["reason"] for e in plan["excluded"]}
