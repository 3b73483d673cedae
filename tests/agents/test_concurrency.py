"""M2 under real concurrency on PostgreSQL: a write checks its connection again inside its own
transaction with the row locked, so a revocation that commits first wins."""

import threading
import time

import pytest
from django.db import transaction

from agents import credentials
from agents.models import Connection
from agents.server import run_tool
from agents.services import connection_create
from config.clock import db_now
from tests.concurrency import run_concurrently
from tests.factories import UserFactory
from tests.helpers import live, postgres_only

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]


def test_it_lets_a_revocation_that_commits_first_win_over_a_write_in_flight():
    user = UserFactory(username="racer")
    created = connection_create(user=user, name="Desk", access="write")
    authenticated = credentials.authenticate(created.token)  # the request's check, passed
    locked = threading.Event()

    def revoke_or_write(index):
        if index == 0:
            with transaction.atomic():
                row = Connection.objects.select_for_update().get(pk=created.connection.pk)
                locked.set()
                time.sleep(0.5)  # the write below waits on this row meanwhile
                row.revoked_at = db_now()
                row.save(update_fields=["revoked_at"])
            return "revoked"
        assert locked.wait(30)
        return run_tool(lambda: authenticated, "save", {"key": "pet.name", "value": "Pixel"})

    [(kind0, revoked), (kind1, answer)] = run_concurrently(revoke_or_write, 2)

    assert (kind0, revoked, kind1) == ("ok", "revoked", "ok")
    assert answer.is_error and answer.body["code"] == "unauthenticated"
    assert live("pet.name", user) is None
