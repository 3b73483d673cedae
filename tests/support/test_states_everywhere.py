"""SPEC E1 on every surface: the state a memory is in now — never its stored status, which W12
may leave behind — on the API, the memories page, the transcript, the history page and the
admin's list, filter and change page. One record whose stored status lags each way:

- basil_plant.name v1 "Harbor", corrected to "Marlowe": stored `active`, state `superseded`;
- pet.name "Rex", whose window ended: stored `active`, state `expired`;

and two transcript labels that must tell what the user did: a memory only confirmed is not
"replaced", and a "No longer true" that was undone is not "no longer true"."""

import re

import pytest
from django.test import Client

from conversations.scopes import Scope
from memory import services
from memory.models import MemoryRecord
from tests.factories import CharacterFactory, ConversationFactory, MessageFactory, UserFactory, at
from tests.support.conftest import staff_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def lagging(db):
    user = UserFactory(username="ana")
    conversation = ConversationFactory(
        user=user, character=CharacterFactory(slug="rowan", name="Rowan")
    )
    named = MessageFactory(
        conversation=conversation,
        content="The basil plant is named Harbor.",
        created_at=at("2026-01-01T10:00"),
    )
    pet = MessageFactory(
        conversation=conversation,
        content="My dog's name is Rex.",
        created_at=at("2026-01-01T10:05"),
    )
    v1 = services.memory_assert(
        user=user,
        key="basil_plant.name",
        value="Harbor",
        scope=Scope("user"),
        authority="rule-extracted",
        sources=[str(named.pk)],
    ).record
    v2 = services.memory_correct(record_id=v1.id, value="Marlowe").record
    ended = services.memory_assert(
        user=user,
        key="pet.name",
        value="Rex",
        scope=Scope("user"),
        authority="rule-extracted",
        sources=[str(pet.pk)],
        valid_until=at("2026-02-01T00:00"),
    ).record
    stored = dict(MemoryRecord.objects.filter(user=user).values_list("id", "status"))
    assert set(stored.values()) == {"active"}  # nothing normalised: the stored status lags
    page = Client()
    page.force_login(user)
    return {
        "user": user,
        "conversation": conversation,
        "v1": v1.id,
        "v2": v2.id,
        "ended": ended.id,
        "page": page,
    }


def _text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_it_shows_the_same_state_for_a_lagging_record_on_every_surface_e1(api, lagging, superuser):
    v1, v2, ended = lagging["v1"], lagging["v2"], lagging["ended"]
    # The API.
    states = {i: api.get(f"/api/v1/memories/{i}").json()["state"] for i in (v1, v2, ended)}
    assert states == {v1: "superseded", v2: "active", ended: "expired"}
    superseded = api.get("/api/v1/memories", {"user": "ana", "state": "superseded"}).json()
    assert [m["id"] for m in superseded["results"]] == [v1]

    # The memories page: only what is remembered now.
    page = lagging["page"]
    cards = page.get("/memories/").context["groups"]
    shown = [row.id for group in cards for row in group["rows"]]
    assert shown == [v2]

    # The transcript: what became of each message's memory.
    transcript = page.get(f"/conversations/{lagging['conversation'].pk}/")
    produced = {
        p.id: (p.status, p.current) for m in transcript.context["messages_"] for p in m.produced
    }
    assert produced == {v1: ("replaced", False), ended: ("ended", False)}

    # The history pages.
    history = page.get(f"/memories/{v1}/history").context["rows"]
    assert [(r.value, r.status) for r in history] == [
        ("Harbor", "replaced"),
        ("Marlowe", "remembered now"),
    ]
    [row] = page.get(f"/memories/{ended}/history").context["rows"]
    assert (row.value, row.status) == ("Rex", "ended")

    # The admin: the state column, the state filter (and its count), the change page.
    admin = staff_client(superuser)
    listed = admin.get("/admin/memory/memoryrecord/", {"q": "ana"})
    html = listed.content.decode()
    for record_id, state in states.items():
        assert re.search(rf'{record_id}.*?data-state="{state}"', html, re.S), state
    assert 'data-state="active">active' not in html.split(v1, 1)[1].split("</tr>", 1)[0]
    filtered = admin.get("/admin/memory/memoryrecord/", {"state": "superseded"})
    assert [str(r.pk) for r in filtered.context["cl"].result_list] == [v1]
    assert filtered.context["cl"].result_count == superseded["count"] == 1
    faceted = _text(admin.get("/admin/memory/memoryrecord/", {"_facets": "True"}))
    assert "superseded (1)" in faceted and "expired (1)" in faceted
    assert "active (1)" in faceted
    change = _text(admin.get(f"/admin/memory/memoryrecord/{v1}/change/"))
    assert "superseded" in change and "R5" in change
    assert "stored status" not in change.lower()


def test_it_shows_a_merely_confirmed_memory_as_remembered_not_replaced_e1(lagging):
    """E1: confirming writes a record that supersedes the old one (R5), but the value is
    what is remembered: the transcript says so, like the memories page ("Confirmed")."""
    page = lagging["page"]
    pet = MessageFactory(conversation=lagging["conversation"], content="My cat's name is Miso.")
    cat = services.memory_assert(
        user=lagging["user"],
        key="cat.name",
        value="Miso",
        scope=Scope("user"),
        authority="rule-extracted",
        sources=[str(pet.pk)],
    ).record
    page.post(f"/memories/{cat.id}/confirm", {"next": "/memories/"})
    transcript = page.get(f"/conversations/{lagging['conversation'].pk}/")
    [label] = [p for m in transcript.context["messages_"] for p in m.produced if p.id == cat.id]
    assert (label.status, label.current) == ("remembered now: you confirmed it", True)
    assert "replaced" not in label.status
    cards = page.get("/memories/").context["groups"]
    [card] = [row for group in cards for row in group["rows"] if row.key == "cat.name"]
    assert card.certainty_label == "Confirmed"


def test_it_shows_an_undone_no_longer_true_as_remembered_again_e1(lagging):
    page = lagging["page"]
    said = MessageFactory(conversation=lagging["conversation"], content="I live in Boston.")
    home = services.memory_assert(
        user=lagging["user"],
        key="user.lives_in",
        value="Boston",
        scope=Scope("user"),
        authority="rule-extracted",
        sources=[str(said.pk)],
    ).record
    page.post(f"/memories/{home.id}/retract", {"next": "/memories/"})
    transcript = page.get(f"/conversations/{lagging['conversation'].pk}/")
    [label] = [p for m in transcript.context["messages_"] for p in m.produced if p.id == home.id]
    assert label.status == "no longer true"
    page.post(f"/memories/{home.id}/restore", {"next": "/memories/"})
    transcript = page.get(f"/conversations/{lagging['conversation'].pk}/")
    [label] = [p for m in transcript.context["messages_"] for p in m.produced if p.id == home.id]
    assert (label.status, label.current) == ("remembered now: you confirmed it", True)


def test_it_labels_each_state_filter_choice_once_with_the_state_the_column_shows_e1(superuser):
    """E1 in the admin: the state filter offers each state under one plain label, the state as
    the list's column and `GET /memories?state=` name it ("forgotten", not "forgotten
    (forgotten)")."""
    listed = staff_client(superuser).get("/admin/memory/memoryrecord/")
    [state_filter] = [f for f in listed.context["cl"].filter_specs if f.title == "state"]
    assert state_filter.lookup_choices == [
        ("active", "active"),
        ("not-yet-valid", "not-yet-valid"),
        ("expired", "expired"),
        ("forgotten", "forgotten"),
        ("superseded", "superseded"),
        ("lower-precedence", "lower-precedence"),
    ]
    html = _text(listed)
    assert "forgotten (forgotten)" not in html and "superseded (replaced)" not in html
