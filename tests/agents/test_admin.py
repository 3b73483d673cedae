"""Support's view of connections (SPEC §15 M1, M3): listed and revocable in the admin, with no
token or token hash shown and no way to create one there; the decision log names the connection
that asked for a decision."""

import pytest
from django.test import Client

from agents import credentials
from agents.services import connection_create
from policy.models import DecisionLog
from support.services import support_group_ensure
from tests.agents.conftest import tool_caller
from tests.factories import UserFactory
from tests.policy.api.calls import decide

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


def test_it_names_the_connection_that_asked_for_a_decision_in_the_decision_log(
    admin_client, api, sam, rowan
):
    """M3, D10: the decision log's list and detail show which personal connection asked — its
    name and its requester id — and `-` for a decision the chat runtime asked for; support
    finds a connection's decisions by that id."""
    connection = connection_create(user=sam, name="Desk assistant", access="read").connection
    body, is_error = tool_caller(connection)(
        "decide", {"capability": "tone.playful", "character": rowan.slug}
    )
    assert not is_error
    by_runtime = decide(api, {"user": "sam", "character": rowan.slug}, "tone.playful").json()
    requester = f"connection:{connection.pk}"
    shown = f"Desk assistant ({requester})"

    listing = admin_client.get("/admin/policy/decisionlog/").content.decode()
    cells = listing.split('<td class="field-requester_ref">')[1:]
    assert sorted(cell.split("</td>")[0] for cell in cells) == sorted([shown, "-"])
    detail = admin_client.get(f"/admin/policy/decisionlog/{body['decision_id']}/change/")
    assert shown in detail.content.decode()
    runtime = admin_client.get(f"/admin/policy/decisionlog/{by_runtime['decision_id']}/change/")
    assert requester not in runtime.content.decode()

    found = admin_client.get("/admin/policy/decisionlog/", {"q": requester})
    assert [str(d.pk) for d in found.context["cl"].result_list] == [body["decision_id"]]
    assert DecisionLog.objects.count() == 2
