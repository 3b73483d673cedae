"""SPEC §13 S2: the user sees every reveal of their private text — on "Your data" ("Support
access": when, for how long, the reason as written, by "a support team member", never the
staff member's name; newest first) and in the export (`reveals`, read-only: an import accepts
and ignores it and restores none)."""

import datetime as dt
import html
import json

import pytest
from django.contrib.auth.models import Permission

from support.models import RevealGrant
from support.reveals import reveal_close, reveal_open
from tests.factories import UserFactory
from tests.helpers import text as page_text

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 8, 3, 14, 5, tzinfo=dt.UTC)
FIRST = "Ticket 101: the user asked why a memory came back."
SECOND = "Ticket 202: checking the plant's name <b>as asked</b>."


def text(response) -> str:
    return html.unescape(page_text(response)).replace(" ,", ",").replace(" .", ".")


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(T0)
    monkeypatch.setattr("support.reveals.db_now", clock)
    monkeypatch.setattr("support.selectors.db_now", clock)
    return clock


@pytest.fixture
def staff(db):
    user = UserFactory(username="support-kestrel", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_private_text"))
    return user


@pytest.fixture
def reveals(sam, staff, clock):
    """Two reveals of sam: one closed after 4 minutes, one left to expire after 15; and one of
    another user."""
    first = reveal_open(staff=staff, user="sam", reason=FIRST)
    clock.now = T0 + dt.timedelta(minutes=4)
    reveal_close(staff=staff, grant_id=first.pk)
    clock.now = T0 + dt.timedelta(hours=2)
    second = reveal_open(staff=staff, user="sam", reason=SECOND)
    UserFactory(username="morgan")
    clock.now = T0 + dt.timedelta(hours=3)
    reveal_open(staff=staff, user="morgan", reason="Ticket 303: someone else entirely")
    return first, second


def test_it_lists_every_reveal_newest_first_without_the_staff_name(page, reveals):
    response = page.get("/data/")
    seen = text(response)
    assert "Support access" in seen
    later, earlier = seen.index("3 Aug 2026, 16:05"), seen.index("3 Aug 2026, 14:05")
    assert later < earlier  # newest first
    assert "3 Aug 2026, 16:05, for 15 minutes, by a support team member." in seen
    assert "3 Aug 2026, 14:05, for 4 minutes, by a support team member." in seen
    assert f"Reason: “{FIRST}”" in seen and f"Reason: “{SECOND}”" in seen  # as written, escaped
    markup = response.content.decode()
    assert "&lt;b&gt;as asked&lt;/b&gt;" in markup
    assert "kestrel" not in markup and "Ticket 303" not in markup


def test_it_says_so_for_an_open_reveal(page, sam, staff, clock):
    reveal_open(staff=staff, user="sam", reason=FIRST)
    clock.now = T0 + dt.timedelta(minutes=2)
    assert "3 Aug 2026, 14:05, open now, until 14:20, by a support team member." in text(
        page.get("/data/")
    )


def test_it_says_no_one_looked_when_there_is_no_reveal(page):
    assert "No one from support has looked at your private text." in text(page.get("/data/"))


def test_it_shows_the_reveals_in_the_users_time_zone(page, sam, reveals):
    from memory.services import profile_set_time_zone

    profile_set_time_zone(user=sam, time_zone="Europe/Berlin")
    assert "3 Aug 2026, 16:05, for 4 minutes" in text(page.get("/data/"))


def test_it_exports_the_reveals_read_only(page, api, reveals):
    snapshot = json.loads(page.get("/data/export.json").content)
    assert snapshot["reveals"] == [
        {
            "opened_at": "2026-08-03T16:05:00Z",
            "expires_at": "2026-08-03T16:20:00Z",
            "ended_at": "2026-08-03T16:20:00Z",
            "status": "expired",
            "reason": SECOND,
            "by": "a support team member",
        },
        {
            "opened_at": "2026-08-03T14:05:00Z",
            "expires_at": "2026-08-03T14:20:00Z",
            "ended_at": "2026-08-03T14:09:00Z",
            "status": "closed",
            "reason": FIRST,
            "by": "a support team member",
        },
    ]
    assert "kestrel" not in json.dumps(snapshot)
    assert api.get("/api/v1/users/sam/export").json()["reveals"] == snapshot["reveals"]


def test_it_accepts_the_reveals_on_import_and_restores_none(api, sam, reveals):
    snapshot = api.get("/api/v1/users/sam/export").json()
    assert len(snapshot["reveals"]) == 2
    before = RevealGrant.objects.count()
    # Into a new user: the reveals come along in the file, and none is created.
    snapshot["user"]["ref"] = "sam-copy"
    response = api.post("/api/v1/users/sam-copy/import", snapshot, format="json")
    assert response.status_code == 200, response.json()
    assert RevealGrant.objects.count() == before
    assert api.get("/api/v1/users/sam-copy/export").json()["reveals"] == []
    # Into the same user (idempotent): nothing changes either.
    snapshot["user"]["ref"] = "sam"
    assert api.post("/api/v1/users/sam/import", snapshot, format="json").status_code == 200
    assert RevealGrant.objects.filter(subject=sam).count() == 2


@pytest.mark.parametrize(
    "reveals_value", [[], [{"anything": "at all"}], [{"opened_at": "not a time"}]]
)
def test_it_ignores_what_the_reveals_say_in_the_snapshot_validator(api, sam, reveals_value):
    snapshot = api.get("/api/v1/users/sam/export").json()
    snapshot["reveals"] = reveals_value
    snapshot["user"]["ref"] = "sam-two"
    response = api.post("/api/v1/users/sam-two/import", snapshot, format="json")
    assert response.status_code == 200, response.json()
    assert not RevealGrant.objects.exists()


def test_it_costs_the_data_page_the_same_for_one_or_many_reveals(
    page, sam, staff, clock, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    grant = reveal_open(staff=staff, user="sam", reason=FIRST)
    reveal_close(staff=staff, grant_id=grant.pk)
    page.get("/data/")
    with CaptureQueriesContext(connection) as captured:
        page.get("/data/")
    expected = len(captured.captured_queries)
    for i in range(20):
        grant = reveal_open(staff=staff, user="sam", reason=f"Ticket {i:04d}: again")
        reveal_close(staff=staff, grant_id=grant.pk)
    with django_assert_num_queries(expected):
        assert page.get("/data/").status_code == 200
