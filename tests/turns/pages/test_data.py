"""Your data (SPEC §9): download the snapshot, forget everything, delete the account."""

import json

import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation
from memory.models import MemoryRecord, Tombstone
from tests.helpers import follow_messages, text

pytestmark = pytest.mark.django_db
User = get_user_model()


def test_it_shows_what_is_kept(page, say, conv):
    say("My dog's name is Rex. I live in Boston.")
    r = page.get("/data/")
    assert r.context["counts"] == {
        "conversations": 1,
        "messages": 1,
        "memories": 2,
        "forgotten": 0,
        "rules": 0,
    }
    seen = text(r)
    assert (
        "Download my data" in seen and "Forget everything" in seen and "Delete my account" in seen
    )


def test_it_downloads_the_snapshot_of_the_user(page, say, alex, alex_conv):
    say("My dog's name is Rex.")

    r = page.get("/data/export.json")

    assert r.status_code == 200
    assert r["Content-Type"] == "application/json; charset=utf-8"
    assert r["Content-Disposition"] == 'attachment; filename="companion-data-sam.json"'
    assert "no-store" in r["Cache-Control"]
    snapshot = json.loads(r.content)
    assert snapshot["format"] == "companion-memory/3"
    assert snapshot["user"]["ref"] == "sam"
    assert [m["value"] for m in snapshot["memories"]] == ["Rex"]
    assert "Alex's chat" not in r.content.decode()


def test_it_downloads_the_same_snapshot_as_the_api_export(page, api, say):
    say("My dog's name is Rex.")
    from_page = json.loads(page.get("/data/export.json").content)
    from_api = api.get("/api/v1/users/sam/export").json()
    from_page.pop("exported_at"), from_api.pop("exported_at")
    assert from_page == from_api


def test_it_asks_before_forgetting_everything(page, say):
    say("My dog's name is Rex.")
    seen = text(page.get("/data/forget-everything"))
    assert "Forget everything?" in seen and "Old messages will not bring anything back" in seen
    assert not Tombstone.objects.exists()


def test_it_forgets_everything(page, say, sam, alex):
    say("My dog's name is Rex. I live in Boston. I like jazz.")
    from conversations.scopes import Scope
    from memory.services import memory_assert

    memory_assert(user=alex, key="dog.name", value="Bolt", scope=Scope("user"))

    r = page.post("/data/forget-everything", follow=True)

    assert r.redirect_chain == [("/memories/", 302)]
    assert set(MemoryRecord.objects.filter(user=sam).values_list("value", flat=True)) == {""}
    assert set(Tombstone.objects.filter(user=sam).values_list("scope_id", "key")) == {
        ("*", "dog.name"),
        ("*", "user.lives_in"),
        ("*", "user.likes"),
    }
    said = follow_messages(r)[0]
    assert "Forgot everything the companion remembered about you, everywhere." in said
    assert "kinds of memory" not in said
    # What the page says after it: forgotten on request, not "nothing yet".
    assert "Nothing is remembered about you now: you asked the companion to forget" in text(r)
    assert "Nothing is remembered about you yet" not in text(r)
    assert MemoryRecord.objects.get(user=alex).value == "Bolt"


def test_it_asks_before_deleting_the_account(page):
    r = page.get("/data/delete-account")
    seen = text(r)
    assert "Delete your account?" in seen and "cannot be undone" in seen
    assert '<label for="id_confirm">Type your username to confirm</label>' in r.content.decode()


@pytest.mark.parametrize("typed", ["", "alex", "SAM"])
def test_it_deletes_nothing_on_a_wrong_confirmation(page, say, sam, typed):
    say("My dog's name is Rex.")
    r = page.post("/data/delete-account", {"confirm": typed})
    assert r.status_code == 200
    assert r.context["form"].errors["confirm"]
    assert "Nothing was saved" in text(r)
    assert (
        User.objects.filter(pk=sam.pk).exists() and MemoryRecord.objects.filter(user=sam).exists()
    )


def test_it_deletes_the_account_and_signs_out(page, say, sam, alex, alex_conv):
    say("My dog's name is Rex.")

    r = page.post("/data/delete-account", {"confirm": "sam"}, follow=True)

    assert r.redirect_chain == [("/login/", 302)]
    assert "Your account and everything in it were deleted." in follow_messages(r)
    assert not User.objects.filter(username="sam").exists()
    assert not MemoryRecord.objects.filter(user_id=sam.pk).exists()
    assert not Conversation.objects.filter(user_id=sam.pk).exists()
    assert Conversation.objects.filter(pk=alex_conv.pk).exists()
    assert page.get("/memories/").status_code == 302
