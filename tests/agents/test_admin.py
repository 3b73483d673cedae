"""Support's view of connections (SPEC §15 M1): listed and revocable in the admin, with no token
or token hash shown and no way to create one there."""

import pytest
from django.test import Client

from agents import credentials
from agents.services import connection_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(db):
    client = Client()
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def test_it_lists_connections_without_their_token(admin_client, sam):
    created = connection_create(user=sam, name="Desk assistant", access="write")
    connection = created.connection

    listing = admin_client.get("/admin/agents/connection/").content.decode()
    detail = admin_client.get(f"/admin/agents/connection/{connection.pk}/change/").content.decode()

    assert "Desk assistant" in listing and connection.prefix in listing
    for html in (listing, detail):
        assert created.token not in html and connection.token_hash not in html
    assert admin_client.get("/admin/agents/connection/add/").status_code == 403


def test_it_revokes_connections_for_support(admin_client, sam):
    created = connection_create(user=sam, name="Desk")

    r = admin_client.post(
        "/admin/agents/connection/",
        {"action": "revoke", "_selected_action": [created.connection.pk]},
    )

    assert r.status_code == 302
    assert credentials.authenticate(created.token) is None
