"""Times on the pages: in the user's time zone (set on "Your data"; unset,
the service's, named), one date format everywhere; the API stays in UTC (SPEC §0)."""

import re
from datetime import UTC, datetime

import pytest

from conversations.scopes import Scope
from memory.models import MemoryProfile
from memory.services import memory_assert, profile_set_time_zone
from tests.factories import MessageFactory
from tests.helpers import text

pytestmark = pytest.mark.django_db

LATE = datetime(2026, 8, 5, 23, 30, tzinfo=UTC)  # already 6 Aug in Berlin (UTC+2 in summer)


@pytest.fixture
def late_memory(sam, conv):
    message = MessageFactory(conversation=conv, created_at=LATE)
    return memory_assert(
        user=sam, key="dog.name", value="Rex", scope=Scope("user"), sources=[str(message.pk)]
    ).record


def test_it_uses_and_names_the_services_zone_when_unset(page, late_memory):
    r = page.get(f"/memories/{late_memory.id}/history")
    seen = text(r)
    assert r.context["rows"][0].starts == "5 Aug 2026, 23:30"
    assert "Times are in UTC, the service's time zone." in seen
    assert "From your message on 5 Aug 2026" in text(page.get("/memories/"))


def test_it_sets_a_time_zone_on_your_data_and_every_page_follows(page, sam, conv, late_memory):
    form = page.get("/data/")
    assert '<select name="time_zone" id="id_time_zone">' in form.content.decode()
    assert "the service's time zone" in text(form)

    r = page.post("/data/time-zone", {"time_zone": "Europe/Berlin"}, follow=True)

    assert r.redirect_chain == [("/data/#time-zone", 302)]
    assert MemoryProfile.objects.get(user=sam).time_zone == "Europe/Berlin"
    assert "Times are now shown in Berlin (Europe)." in text(r)
    assert '<option value="Europe/Berlin" selected>Berlin</option>' in r.content.decode()
    history = page.get(f"/memories/{late_memory.id}/history")
    assert history.context["rows"][0].starts == "6 Aug 2026, 01:30"
    assert "Times are in your time zone, Europe/Berlin." in text(history)
    assert "From your message on 6 Aug 2026" in text(page.get("/memories/"))
    transcript = text(page.get(f"/conversations/{conv.pk}/"))
    assert "6 Aug 2026, 01:30" in transcript and "Europe/Berlin" in transcript


def test_it_clears_the_choice_when_the_services_zone_is_chosen_again(page, sam):
    profile_set_time_zone(user=sam, time_zone="Asia/Tokyo")
    page.post("/data/time-zone", {"time_zone": ""})
    assert MemoryProfile.objects.get(user=sam).time_zone == ""


@pytest.mark.parametrize("bad", ["Mars/Olympus", "x" * 500, "Europe/Berlin\x00"])
def test_it_refuses_an_unknown_zone_on_the_form(page, sam, bad):
    r = page.post("/data/time-zone", {"time_zone": bad})
    assert r.status_code == 200 and r.context["time_zone_form"].errors["time_zone"]
    assert "Nothing was saved" in text(r)
    assert not MemoryProfile.objects.filter(user=sam).exclude(time_zone="").exists()


def test_it_uses_one_date_format_everywhere_even_this_year(page, say, sam, conv):
    """ "30 Nov 2026" and "30 Nov" were both used: every date now carries its year."""
    say("My dog's name is Rex.")
    pages = [
        page.get(url) for url in ("/memories/", "/conversations/", f"/conversations/{conv.pk}/")
    ]
    for r in pages:
        seen = text(r)
        dates = re.findall(
            r"\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b(?: \d{4})?", seen
        )
        assert dates and all(re.fullmatch(r"\d{1,2} [A-Z][a-z]{2} \d{4}", d) for d in dates), (
            r.request,
            dates,
        )


def test_it_keeps_the_api_answering_in_utc(api, sam, late_memory):
    profile_set_time_zone(user=sam, time_zone="Europe/Berlin")
    body = api.get(f"/api/v1/memories/{late_memory.id}").json()
    assert body["valid_from"] == "2026-08-05T23:30:00Z"
