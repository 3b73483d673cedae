"""The "Connected assistants" page (SPEC §15 M1): create a connection with a name,
characters, access and expiry; its token shown once and stored hashed; the list with last use;
revoke; reachable from every page's navigation; works without scripts (plain forms)."""

import re

import pytest
from django.contrib.auth import get_user_model

from agents import credentials
from agents.models import Connection
from agents.services import connection_create
from config.models import hash_token
from conversations.services import user_delete
from tests.factories import CharacterFactory
from tests.helpers import text

pytestmark = pytest.mark.django_db
User = get_user_model()

FORM = {"name": "Laptop assistant", "access": "write", "everyone": "all", "expiry": "30"}


def _token(response) -> str:
    return re.search(r'<code id="token" class="token">([^<]+)</code>', response.content.decode())[1]


def test_it_creates_a_connection_and_shows_its_token_once_stored_hashed(page, sam):
    """M1: the token is shown once, in the answer to the form; only its hash is kept."""
    r = page.post("/assistants/", FORM)

    assert r.status_code == 200
    token = _token(r)
    connection = Connection.objects.get(user=sam)
    assert (connection.name, connection.access, connection.all_characters) == (
        "Laptop assistant",
        "write",
        True,
    )
    assert connection.token_hash == hash_token(token) and token not in connection.token_hash
    assert connection.prefix == token[:12]
    assert (connection.expires_at - connection.created_at).days == 30
    again = page.get("/assistants/")
    assert token not in again.content.decode() and connection.prefix in again.content.decode()


def test_it_limits_a_connection_to_the_characters_chosen(page, sam, rowan):
    """M1: a connection for chosen characters keeps exactly those."""
    CharacterFactory(slug="wren", name="Wren")
    page.post("/assistants/", {**FORM, "everyone": "chosen", "characters": ["captain-rowan"]})

    connection = Connection.objects.get(user=sam)
    assert connection.all_characters is False
    assert list(connection.characters.values_list("slug", flat=True)) == ["captain-rowan"]
    assert "Captain Rowan" in text(page.get("/assistants/"))


@pytest.mark.parametrize(
    "form, field",
    [
        ({**FORM, "name": ""}, "name"),
        ({**FORM, "access": "admin"}, "access"),
        ({**FORM, "expiry": "7"}, "expiry"),
        ({**FORM, "everyone": "chosen"}, "characters"),
    ],
)
def test_it_refuses_a_form_that_is_not_a_connection_and_stores_nothing(page, form, field):
    """M1: name, access (read | write | forget), expiry (30, 90, 365), characters."""
    r = page.post("/assistants/", form)

    assert r.status_code == 400
    assert field in r.context["form"].errors
    assert not Connection.objects.exists()


def test_it_lists_connections_with_their_last_use(page, sam):
    """M1: listed with its last use."""
    created = connection_create(user=sam, name="Desk")
    assert "Never used" in text(page.get("/assistants/"))

    credentials.authenticate(created.token)

    seen = text(page.get("/assistants/"))
    assert "Desk" in seen and "Never used" not in seen and "Last used" in seen


def test_it_revokes_a_connection_at_once(page, sam):
    """M1: revocable by the user at once: the token stops working."""
    created = connection_create(user=sam, name="Desk")

    r = page.post(f"/assistants/{created.connection.pk}/revoke")

    assert r.status_code == 302
    assert credentials.authenticate(created.token) is None
    assert "Disconnected." in text(page.get("/assistants/"))


def test_it_does_not_revoke_another_users_connection(page, alex):
    """M1: a connection is a credential of one user: another's id is a 404."""
    created = connection_create(user=alex, name="Alex's")

    r = page.post(f"/assistants/{created.connection.pk}/revoke")

    assert r.status_code == 404
    assert credentials.authenticate(created.token) is not None


def test_it_is_reachable_from_every_pages_navigation(page):
    """M1: "Connected assistants", reachable from every page's navigation."""
    for path in ("/memories/", "/boundaries/", "/conversations/", "/data/", "/assistants/"):
        html = page.get(path).content.decode()
        assert '<a href="/assistants/"' in html, path


def test_it_deletes_connections_with_their_user(sam):
    """M1: connections are deleted with their user (the user's erasure, SPEC §9)."""
    created = connection_create(user=sam, name="Desk")
    user_delete(user=sam)
    assert not Connection.objects.filter(pk=created.connection.pk).exists()


def test_it_leaves_connections_out_of_the_export(page, sam):
    """M1: connections are not exported (they are credentials)."""
    created = connection_create(user=sam, name="Desk assistant")
    exported = page.get("/data/export.json").content.decode()
    assert "Desk assistant" not in exported and created.connection.prefix not in exported


def test_it_names_each_group_of_choices_with_a_legend(page, rowan):
    """M1: access, characters and expiry in words; every control labelled (no empty `for`)."""
    html = page.get("/assistants/").content.decode()
    for legend in ("What it may do", "Which characters", "Characters"):
        assert f"<legend>{legend}</legend>" in html
    assert 'for=""' not in html
    seen = text(page.get("/assistants/"))
    assert "Read, write and forget" in seen and "365 days" in seen and "Captain Rowan" in seen
