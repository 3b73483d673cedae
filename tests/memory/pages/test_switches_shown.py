"""SPEC I8 where it matters: with `use` off every page says memories are not used in
conversations now, and no card or group says they are; with `learn` off the memories page
and the transcript say nothing new is noted. The switches are read with the profile the
pages load anyway: switching one off adds no query."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.services import memory_settings_set
from tests.helpers import text

pytestmark = pytest.mark.django_db

NOT_USED = "Memories are not used in conversations now."
NOTHING_NOTED = "Nothing new is noted now."


def pages(conv):
    return [
        "/memories/",
        "/memories/forgotten/",
        "/memories/no-longer-true/",
        "/boundaries/",
        "/conversations/",
        f"/conversations/{conv.pk}/",
        "/data/",
    ]


def test_it_says_on_every_page_that_memories_are_not_used_with_use_off(page, say, sam, conv):
    """I8: `use` off is said on every page, with the way to turn it back on."""
    say("My dog's name is Rex.")
    for url in pages(conv):
        assert NOT_USED not in text(page.get(url)), url
    memory_settings_set(user=sam, changed_by="user", use=False)
    for url in pages(conv):
        response = page.get(url)
        assert response.status_code == 200, url
        assert NOT_USED in text(response), url
        assert 'href="/memories/#switches"' in response.content.decode(), url


def test_it_lets_no_card_or_group_say_it_is_used_with_use_off(page, say, sam):
    """I8: the cards and the group line say the memory is not used now; nothing still says
    "Used in conversations as …" or "Every companion may use these"."""
    say("My dog's name is Rex. I like green tea.")
    before = text(page.get("/memories/"))
    assert "Used in conversations as" in before and "Every companion may use these" in before
    memory_settings_set(user=sam, changed_by="user", use=False)
    after = text(page.get("/memories/"))
    assert "Used in conversations as" not in after
    assert "Every companion may use these" not in after
    assert after.count("Not used in conversations now: you turned memory use off.") == 2
    assert "Rex" in after  # nothing is deleted or hidden


def test_it_says_on_memories_and_transcript_that_nothing_new_is_noted_with_learn_off(
    page, say, sam, conv
):
    """I8: `learn` off on the memories page and the transcript; a message said while it was
    off says nothing was noted from it. Other pages do not carry it."""
    say("My dog's name is Rex.")
    memory_settings_set(user=sam, changed_by="user", learn=False)
    say("I live in Porto.")
    memories = text(page.get("/memories/"))
    assert NOTHING_NOTED in memories and NOT_USED not in memories
    transcript = text(page.get(f"/conversations/{conv.pk}/"))
    assert NOTHING_NOTED in transcript
    assert transcript.count("Nothing was noted from this message: learning was off.") == 1
    assert NOTHING_NOTED not in text(page.get("/boundaries/"))


@pytest.mark.parametrize("url", ["/memories/", "/boundaries/", "/data/"])
def test_it_shows_the_switches_at_no_query_cost(page, say, sam, conv, url):
    """I8: the switches come with the profile the page loads for its time zone: the same
    number of queries with them on, off, and for a user without a profile yet."""
    say("My dog's name is Rex.")
    page.get(url)
    with CaptureQueriesContext(connection) as on:
        page.get(url)
    memory_settings_set(user=sam, changed_by="user", use=False, learn=False)
    page.get(url)
    with CaptureQueriesContext(connection) as off:
        page.get(url)
    assert len(off) == len(on)


def test_it_reads_the_defaults_for_a_user_without_a_profile_without_a_query(db):
    """I8: no profile yet is both switches on, read without asking twice."""
    from django.test import Client

    from memory.models import MemoryProfile
    from tests.factories import UserFactory

    user = UserFactory(username="new-person")
    MemoryProfile.objects.filter(user=user).delete()
    client = Client()
    client.force_login(user)
    client.get("/boundaries/")
    with CaptureQueriesContext(connection) as seen:
        response = client.get("/boundaries/")
    assert NOT_USED not in text(response)
    assert sum("memory_memoryprofile" in q["sql"] for q in seen.captured_queries) == 1
