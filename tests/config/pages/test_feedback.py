"""Feedback where the eye is: a boundary save's message inside the card it was made from (the
address names the card, so it lands there without JavaScript too); one message for an empty
sign-in; a signed-out message; the time-zone choice lists canonical zones grouped by region;
the admin writes dates as the pages do; the demo's times are spread over days."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.helpers import text

pytestmark = pytest.mark.django_db


def card_html(html: str, card_id: str) -> str:
    start = html.index(f'id="{card_id}"')
    return html[start : html.index("</li>", html.index("</details>", start))]


def test_it_says_a_boundary_was_saved_inside_its_card(page, conv):
    """The message goes with the card (`#card-…`, focusable), not to the top of the page."""
    r = page.post(
        "/boundaries/set",
        {"capability": "media.voice", "effect": "deny", "where": "global", "section": "everywhere"},
    )
    assert r.status_code == 302 and r["Location"].endswith("#card-everywhere-media-voice")
    html = page.get(r["Location"].split("#")[0]).content.decode()
    card = card_html(html, "card-everywhere-media-voice")
    assert 'tabindex="-1"' in card[:80]
    assert "Saved: Voice messages — never, everywhere." in card
    assert 'id="messages"' not in html


def test_it_keeps_the_message_of_a_save_without_a_section_at_the_top(page, conv):
    r = page.post(
        "/boundaries/set",
        {"capability": "media.voice", "effect": "deny", "where": "global"},
        follow=True,
    )
    assert 'id="messages"' in r.content.decode() and "Saved: Voice messages" in text(r)


def test_it_shows_one_clear_error_for_an_empty_sign_in(db):
    r = Client().post("/login/", {"username": "", "password": ""})
    seen = text(r)
    assert "Enter your username and your password to sign in." in seen
    assert "This field is required" not in seen and "didn't match" not in seen
    assert seen.count("Enter your username and your password") == 1


def test_it_still_says_a_wrong_password_did_not_match(sam):
    r = Client().post("/login/", {"username": "sam", "password": "wrong"})
    assert "Your username and password didn't match. Please try again." in text(r)


def test_it_says_so_after_signing_out(page):
    r = page.post("/logout/", follow=True)
    assert r.redirect_chain[-1][0].endswith("/login/")
    assert "You are signed out." in text(r)
    assert "You are signed out." not in text(Client().get("/login/"))


def test_it_lists_canonical_time_zones_by_region(page):
    html = page.get("/data/").content.decode()
    select = html[
        html.index('name="time_zone"') : html.index("</select>", html.index('name="time_zone"'))
    ]
    values = re.findall(r'<option value="([^"]*)"', select)
    assert len(values) == len(set(values))
    for legacy in (
        "Africa/Asmera",
        "Asia/Calcutta",
        "Europe/Kiev",
        "Factory",
        "localtime",
        "Etc/GMT+5",
    ):
        assert legacy not in values
    for canonical in ("Asia/Kolkata", "Europe/Kyiv", "Africa/Asmara", "UTC"):
        assert canonical in values
    assert {"Africa", "America", "Asia", "Europe"} <= set(
        re.findall(r'<optgroup label="([^"]+)"', select)
    )


def test_it_writes_dates_in_the_admin_as_the_pages_do(db):
    """The admin's changelists and the pages say "1 Dec 2026, 19:21"."""
    from datetime import UTC, datetime

    from django.utils import formats

    assert formats.localize(datetime(2026, 12, 1, 19, 21, tzinfo=UTC)) == "1 Dec 2026, 19:21"
    assert formats.date_format(datetime(2026, 12, 1).date()) == "1 Dec 2026"


def test_it_spreads_the_demos_evenings_over_days_and_says_what_it_learned(db):
    """The demo: replies are sentences, every memory with a source message is said in it (the
    lamp), and the messages fall on three evenings days apart."""
    from django.core.management import call_command

    from conversations.models import Message
    from memory.models import MemoryRecord

    call_command("load_demo", "--username=demo-check", "--password=pw-demo-check")
    messages = Message.objects.filter(user__username="demo-check")
    replies = list(messages.filter(role="assistant").values_list("content", flat=True))
    assert replies and not any(re.search(r"\(reply \d+\)", r) or r == "…" for r in replies)
    days = {m.date() for m in messages.values_list("created_at", flat=True)}
    assert len(days) == 3
    lamp = MemoryRecord.objects.get(user__username="demo-check", key="scene.lamp")
    assert all("lamp" in m.content for m in lamp.sources.all()) and lamp.sources.exists()
    assert lamp.valid_from.date() in days
    seqs = list(messages.order_by("conversation", "seq").values_list("created_at", flat=True))
    assert seqs == sorted(seqs)  # the order of everything is the order played
