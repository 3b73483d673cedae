"""SPEC I8 on the memories page: both switches, each with one plain sentence on what it does
and does not do; saving records the user as who changed them; nothing is deleted."""

import pytest

from memory.models import MemoryProfile, MemoryRecord
from memory.switches import memory_settings_of
from tests.helpers import text

pytestmark = pytest.mark.django_db


def test_it_shows_both_switches_on_by_default_with_what_they_do(page, say, sam):
    say("My dog's name is Rex.")
    html = page.get("/memories/").content.decode()
    assert 'id="switches"' in html
    assert 'name="learn"' in html and 'name="use"' in html
    assert html.count("checked") >= 2
    words = text(page.get("/memories/"))
    assert "Learn from my messages" in words and "Use memories in conversations" in words
    assert "Nothing is deleted" in words


def test_it_records_the_user_switching_use_off_and_deletes_nothing(page, say, sam):
    say("My dog's name is Rex.")
    before = MemoryRecord.objects.filter(user=sam).count()
    r = page.post("/memories/switches", {"switches": "1", "learn": "on", "next": "/memories/"})
    assert r.status_code == 302 and r["Location"] == "/memories/#switches"
    settings = memory_settings_of(MemoryProfile.objects.get(user=sam).user)
    assert (settings.learn, settings.use, settings.changed_by) == (True, False, "user")
    assert settings.changed_at is not None
    assert MemoryRecord.objects.filter(user=sam).count() == before
    after = page.get("/memories/")
    assert "uses none of these memories in conversations" in text(after)
    assert "Rex" in text(after)  # still listed: the switch is about prompts
    html = after.content.decode()
    use_box = html[html.index('name="use"') - 200 : html.index('name="use"') + 50]
    assert "checked" not in use_box


def test_it_switches_learning_off_then_on(page, sam):
    page.post("/memories/switches", {"switches": "1", "use": "on"})
    assert memory_settings_of(MemoryProfile.objects.get(user=sam).user).learn is False
    page.post("/memories/switches", {"switches": "1", "use": "on", "learn": "on"})
    profile = MemoryProfile.objects.get(user=sam)
    assert (profile.learn, profile.use, profile.settings_changed_by) == (True, True, "user")


def test_it_changes_nothing_when_the_same_choices_are_saved(page, sam):
    r = page.post("/memories/switches", {"switches": "1", "use": "on", "learn": "on"}, follow=True)
    assert "Nothing changed" in text(r)
    assert MemoryProfile.objects.get(user=sam).settings_changed_at is None


def test_it_switches_nothing_on_a_get(page, sam):
    assert page.get("/memories/switches").status_code == 405
