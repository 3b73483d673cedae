"""S1 under real concurrency on PostgreSQL (threads, one connection each): a staff member
never holds two open reveals, however many requests open one at the same moment."""

import pytest
from django.contrib.auth.models import Permission

from support.models import PrivateTextAccess, RevealGrant
from support.reveals import RevealAlreadyOpen, reveal_open
from tests.concurrency import run_concurrently
from tests.factories import UserFactory
from tests.helpers import postgres_only

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]


def staff_member(name: str):
    user = UserFactory(username=name, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_private_text"))
    return user


def test_it_leaves_one_open_reveal_after_concurrent_opens_of_one_user():
    staff = staff_member("support-racer")
    UserFactory(username="sam")
    results = run_concurrently(
        lambda i: reveal_open(staff=staff, user="sam", reason=f"Ticket {i:04d}: race"), 8
    )
    opened = [value for kind, value in results if kind == "ok"]
    refused = [value for kind, value in results if kind == "error"]
    assert len(opened) == 1, results
    assert len(refused) == 7 and all(isinstance(e, RevealAlreadyOpen) for e in refused), refused
    assert RevealGrant.objects.filter(closed_at__isnull=True).count() == 1
    assert PrivateTextAccess.objects.filter(event="opened").count() == 1


def test_it_leaves_one_open_reveal_of_concurrent_users_and_logs_every_close():
    staff = staff_member("support-juggler")
    for i in range(6):
        UserFactory(username=f"user-{i}")
    results = run_concurrently(
        lambda i: reveal_open(staff=staff, user=f"user-{i}", reason=f"Ticket {i:04d}: many"), 6
    )
    assert all(kind == "ok" for kind, _ in results), results
    assert RevealGrant.objects.filter(closed_at__isnull=True).count() == 1
    assert RevealGrant.objects.filter(ended="replaced").count() == 5
    events = list(PrivateTextAccess.objects.values_list("event", flat=True))
    assert events.count("opened") == 6 and events.count("closed") == 5
