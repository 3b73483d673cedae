"""Support's view of connections (SPEC §15 M1): listed and revocable in the admin, with no token
or token hash shown and no way to create one there."""

import pytest
from django.test import Client

from agents import credentials
from agents.services import connection_create
from support.services import support_group_ensure
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(db):
    """A member of the Support group, with its permissions and nothing more."""
    member = UserFactory(username="support-alex", is_staff=True)
    member.groups.add(support_group_ensure())
    client = Client()
    client.force_login(member)
    return client


def test_it_lists_connections_without_their_token(admin_client, sam):
    """M1: support sees connections in the admin, never a token, and cannot make one."""
    created = connection_create(user=sam, name="Desk assistant", access="write")
    connection = created.connection

    listing = admin_client.get("/admin/agents/connection/").content.decode()
    detail = admin_client.get(f"/admin/agents/connection/{connection.pk}/change/").content.decode()

    assert "Desk assistant" in listing and connection.prefix in listing
    for html in (listing, detail):
        assert created.token not in html and connection.token_hash not in html
    assert admin_client.get("/admin/agents/connection/add/").status_code == 403


def test_it_revokes_connections_for_support(admin_client, sam):
    """M1: support revokes connections in the admin (the Support group may)."""
    created = connection_create(user=sam, name="Desk")

    r = admin_client.post(
        "/admin/agents/connection/",
        {"action": "revoke", "_selected_action": [created.connection.pk]},
    )

    assert r.status_code == 302
    assert credentials.authenticate(created.token) is None
