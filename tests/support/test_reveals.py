"""SPEC §13 S1, S2: a reveal is a grant — one staff member, one user, a written reason, a time
box — opened from the user's admin page or any masked value, closed by a button or by time
(checked as a page is drawn, with a controlled clock here), and everything about it is logged
append-only. Bad input opens nothing and says why."""

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.errors import PermissionDenied
from support import reveals
from support.models import AppendOnly, PrivateTextAccess, RevealGrant
from tests.support.conftest import (
    ALEX_STRINGS,
    ALEX_VALUE,
    REASON,
    REPLY,
    VALUE,
    assert_no_private_text,
    assert_no_text_of,
    open_reveal,
    staff_client,
)

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 8, 5, 12, 0, tzinfo=dt.UTC)
MEMORIES = "/admin/memory/memoryrecord/"


class Clock:
    """The database clock (config/clock.py `db_now`) as the reveal services read it."""

    def __init__(self, now: dt.datetime):
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta) -> dt.datetime:
        self.now += dt.timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(T0)
    monkeypatch.setattr("support.reveals.db_now", clock)
    monkeypatch.setattr("support.selectors.db_now", clock)
    return clock


def events(staff):
    return list(
        PrivateTextAccess.objects.filter(staff_id=staff.pk)
        .order_by("id")
        .values_list("event", flat=True)
    )


def post_reveal(client, **data):
    return client.post("/admin/support/reveal/", {"user": "sam", "reason": REASON, **data})


# --- opening ---------------------------------------------------------------------------------


def test_it_opens_from_the_form_for_one_user_with_a_reason(
    world, privileged, privileged_user, clock
):
    response = post_reveal(privileged, next="/admin/conversations/message/")
    assert response.status_code == 302 and response["Location"] == "/admin/conversations/message/"
    grant = RevealGrant.objects.get()
    assert (grant.staff_id, grant.staff_username, grant.subject_id, grant.reason) == (
        privileged_user.pk,
        "support-priya",
        world.sam.pk,
        REASON,
    )
    assert (grant.opened_at, grant.expires_at, grant.closed_at) == (
        T0,
        T0 + dt.timedelta(minutes=15),
        None,
    )
    [opened] = PrivateTextAccess.objects.filter(event="opened")
    assert (opened.grant_id, opened.subject_id, opened.accessed_at) == (grant.pk, world.sam.pk, T0)
    html = privileged.get("/admin/conversations/message/").content.decode()
    assert REPLY in html and 'id="reveal-banner"' in html and REASON in html


def test_it_reaches_the_form_from_the_users_admin_page_and_from_a_masked_value(world, privileged):
    page = privileged.get(f"/admin/auth/user/{world.sam.pk}/change/").content.decode()
    assert 'id="reveal-this-user"' in page and "/admin/support/reveal/?user=sam" in page
    form = privileged.get("/admin/support/reveal/", {"user": "sam", "next": MEMORIES})
    assert form.status_code == 200
    html = form.content.decode()
    assert 'value="sam"' in html and f'value="{MEMORIES}"' in html
    assert "Your data" in html  # the form says the user will see it


def test_it_lands_on_the_users_memories_without_a_redirect_target(world, privileged):
    response = post_reveal(privileged)
    assert response["Location"] == f"{MEMORIES}?q=sam"


@pytest.mark.parametrize(
    "data, field, message",
    [
        ({"reason": ""}, "reason", "Say why"),
        ({"reason": "   "}, "reason", "Say why"),
        ({"reason": "ticket 1"}, "reason", "At least 10 characters"),
        ({"reason": "x" * 501}, "reason", "At most 500 characters"),
        ({"user": "nobody-at-all"}, "user", "No user is called “nobody-at-all”."),
        ({"user": ""}, "user", "Name the user"),
    ],
)
def test_it_shows_bad_input_as_a_form_error_and_opens_nothing(
    world, privileged, data, field, message
):
    response = post_reveal(privileged, **data)
    assert response.status_code == 200
    assert message in " ".join(response.context["form"].errors[field])
    assert message.split("“")[0] in response.content.decode()
    assert not RevealGrant.objects.exists() and not PrivateTextAccess.objects.exists()


@pytest.mark.parametrize("reason", ["x" * 10, "y" * 500, "  Ticket 7: ok  "])
def test_it_keeps_a_reason_of_10_to_500_characters_as_written(world, privileged_user, reason):
    assert open_reveal(privileged_user, reason=reason).reason == reason.strip()


def test_it_lets_no_staff_without_the_permission_open_a_reveal(world, support, support_user):
    assert support.get("/admin/support/reveal/", {"user": "sam"}).status_code == 403
    assert post_reveal(support).status_code == 403
    with pytest.raises(PermissionDenied):
        open_reveal(support_user)
    assert not RevealGrant.objects.exists()


def test_it_refuses_a_second_reveal_of_the_same_user_and_offers_to_extend_it(
    world, privileged, privileged_user, clock
):
    first = open_reveal(privileged_user)
    clock.advance(minutes=5)
    response = post_reveal(privileged)
    assert response.status_code == 200
    assert "already have a reveal of sam" in " ".join(response.context["form"].non_field_errors())
    assert f"/admin/support/reveal/{first.pk}/extend/" in response.content.decode()
    assert RevealGrant.objects.count() == 1
    # Extending starts the time again, and is logged.
    response = privileged.post(f"/admin/support/reveal/{first.pk}/extend/", {"next": MEMORIES})
    assert response["Location"] == MEMORIES
    first.refresh_from_db()
    assert first.expires_at == T0 + dt.timedelta(minutes=20)
    assert events(privileged_user) == ["opened", "extended"]


def test_it_closes_the_open_reveal_when_another_user_is_revealed(
    world, alex, privileged_user, clock
):
    first = open_reveal(privileged_user, "sam")
    clock.advance(minutes=1)
    second = open_reveal(privileged_user, "alex")
    first.refresh_from_db()
    assert (first.closed_at, first.ended) == (T0 + dt.timedelta(minutes=1), "replaced")
    assert second.closed_at is None
    assert events(privileged_user) == ["opened", "closed", "opened"]
    assert RevealGrant.objects.filter(closed_at__isnull=True).count() == 1


def test_it_hides_the_text_again_with_the_close_button(world, privileged, privileged_user, clock):
    grant = open_reveal(privileged_user)
    assert VALUE in privileged.get(MEMORIES).content.decode()
    clock.advance(minutes=3)
    response = privileged.post(f"/admin/support/reveal/{grant.pk}/close/", {"next": MEMORIES})
    assert response["Location"] == MEMORIES
    html = privileged.get(MEMORIES).content.decode()
    assert VALUE not in html and "Closed: sam&#x27;s private text is hidden again." in html
    grant.refresh_from_db()
    assert (grant.closed_at, grant.ended) == (T0 + dt.timedelta(minutes=3), "closed")
    privileged.post(f"/admin/support/reveal/{grant.pk}/close/")  # a second click changes nothing
    assert events(privileged_user) == ["opened", "page", "closed"]


def test_it_lets_nobody_close_or_extend_another_staff_members_reveal(
    world, privileged_user, other_privileged_user
):
    grant = open_reveal(privileged_user)
    other = staff_client(other_privileged_user)
    assert other.post(f"/admin/support/reveal/{grant.pk}/close/").status_code == 404
    assert other.post(f"/admin/support/reveal/{grant.pk}/extend/").status_code == 404
    assert other.get(f"/admin/support/reveal/{grant.pk}/close/").status_code == 405
    grant.refresh_from_db()
    assert grant.closed_at is None


# --- expiry, with a controlled clock -----------------------------------------------------


def test_it_ends_by_time_when_the_next_page_is_drawn(world, privileged, privileged_user, clock):
    grant = open_reveal(privileged_user)
    clock.advance(minutes=14, seconds=59)
    assert VALUE in privileged.get(MEMORIES).content.decode()
    clock.advance(seconds=1)  # 15 minutes: over
    html = privileged.get(MEMORIES).content.decode()
    assert_no_private_text(html, "the list after the reveal's time")
    assert 'id="reveal-banner"' not in html and "private text ended at 12:15:00" in html
    grant.refresh_from_db()
    assert (grant.closed_at, grant.ended) == (grant.expires_at, "expired")
    [expired] = PrivateTextAccess.objects.filter(event="expired")
    assert expired.accessed_at == T0 + dt.timedelta(minutes=15)
    privileged.get(MEMORIES)
    assert events(privileged_user) == ["opened", "page", "expired"]  # logged once


def test_it_lasts_from_its_extension_when_extended(world, privileged, privileged_user, clock):
    grant = open_reveal(privileged_user)
    clock.advance(minutes=10)
    reveals.reveal_extend(staff=privileged_user, grant_id=grant.pk)
    clock.advance(minutes=14)  # 24 minutes after opening, 14 after extending
    assert VALUE in privileged.get(MEMORIES).content.decode()
    clock.advance(minutes=1)
    assert VALUE not in privileged.get(MEMORIES).content.decode()
    with pytest.raises(reveals.ValidationError):
        reveals.reveal_extend(staff=privileged_user, grant_id=grant.pk)  # ended: open a new one


def test_it_does_not_block_a_new_reveal_with_an_expired_one(world, privileged_user, clock):
    first = open_reveal(privileged_user)
    clock.advance(minutes=16)  # no page was drawn meanwhile
    second = open_reveal(privileged_user)
    first.refresh_from_db()
    assert (first.ended, first.closed_at) == ("expired", T0 + dt.timedelta(minutes=15))
    assert second.opened_at == T0 + dt.timedelta(minutes=16)
    assert events(privileged_user) == ["opened", "expired", "opened"]


def test_it_takes_its_duration_from_a_setting(world, privileged_user, clock, settings):
    settings.SUPPORT_REVEAL_SECONDS = 90
    assert open_reveal(privileged_user).expires_at == T0 + dt.timedelta(seconds=90)


def test_it_shows_nothing_to_staff_who_lose_the_permission_even_with_a_reveal_open(
    world, privileged, privileged_user
):
    open_reveal(privileged_user)
    privileged_user.user_permissions.remove(Permission.objects.get(codename="view_private_text"))
    assert VALUE not in privileged.get(MEMORIES).content.decode()


# --- two staff, two users ----------------------------------------------------------------------


def test_it_shows_two_staff_with_reveals_of_two_users_only_their_own_user(
    world, alex, privileged_user, other_privileged_user
):
    open_reveal(privileged_user, "sam")
    open_reveal(other_privileged_user, "alex")
    priya, omar = staff_client(privileged_user), staff_client(other_privileged_user)
    pages = [MEMORIES, "/admin/conversations/message/", "/admin/conversations/conversation/"]
    html = "".join(priya.get(url).content.decode() for url in pages)
    assert VALUE in html and REPLY in html
    assert_no_text_of(html, ALEX_STRINGS, "priya's pages")
    html = "".join(omar.get(url).content.decode() for url in pages)
    assert ALEX_VALUE in html
    assert_no_private_text(html, "omar's pages")
    explain = omar.get("/admin/support/explain/", {"user": "sam"}).content.decode()
    assert VALUE not in explain
    for staff, user in ((privileged_user, world.sam), (other_privileged_user, alex.user)):
        assert set(
            PrivateTextAccess.objects.filter(staff_id=staff.pk).values_list("subject_id", flat=True)
        ) == {user.pk}


# --- the log ---------------------------------------------------------------------------------


def test_it_lets_only_the_view_permission_read_the_access_log(
    world, privileged, privileged_user, superuser, support_group
):
    grant = open_reveal(privileged_user)
    assert not support_group.permissions.filter(
        codename__in=["view_privatetextaccess", "view_revealgrant"]
    ).exists()
    for url in [
        "/admin/support/privatetextaccess/",
        "/admin/support/revealgrant/",
        f"/admin/support/revealgrant/{grant.pk}/change/",
    ]:
        assert privileged.get(url).status_code == 403, url
    root = staff_client(superuser)
    html = root.get("/admin/support/privatetextaccess/").content.decode()
    assert "support-priya" in html and REASON in html and "reveal opened" in html
    assert root.get(f"/admin/support/revealgrant/{grant.pk}/change/").status_code == 200
    privileged_user.user_permissions.add(Permission.objects.get(codename="view_privatetextaccess"))
    assert staff_client(privileged_user).get("/admin/support/privatetextaccess/").status_code == 200


def test_it_lets_no_one_change_or_delete_the_access_log_or_reveals_in_the_admin(
    world, privileged_user, superuser
):
    grant = open_reveal(privileged_user)
    row = PrivateTextAccess.objects.get()
    root = staff_client(superuser)
    for path, pk in (("privatetextaccess", row.pk), ("revealgrant", grant.pk)):
        assert root.get(f"/admin/support/{path}/add/").status_code == 403
        assert (
            root.post(f"/admin/support/{path}/{pk}/change/", {"reason": "changed"}).status_code
            == 403
        )
        assert root.post(f"/admin/support/{path}/{pk}/delete/", {"post": "yes"}).status_code == 403
        response = root.post(
            f"/admin/support/{path}/", {"action": "delete_selected", "_selected_action": [pk]}
        )
        # The list offers no action at all (no delete permission): the POST shows it again.
        assert response.status_code == 200
    assert PrivateTextAccess.objects.filter(pk=row.pk, event="opened").exists()
    assert RevealGrant.objects.get().reason == REASON


def test_it_keeps_the_access_log_append_only_below_the_admin_too(world, privileged_user):
    open_reveal(privileged_user)
    row = PrivateTextAccess.objects.get()
    row.event = "closed"
    with pytest.raises(AppendOnly):
        row.save()
    with pytest.raises(AppendOnly):
        row.delete()
    with pytest.raises(AppendOnly):
        PrivateTextAccess.objects.all().delete()
    assert PrivateTextAccess.objects.get().event == "opened"


def test_it_costs_one_insert_per_page_whatever_the_page_shows(world, privileged, privileged_user):
    open_reveal(privileged_user)
    privileged.get(MEMORIES)
    with CaptureQueriesContext(connection) as captured:
        privileged.get(MEMORIES)
    inserts = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 1 and "support_privatetextaccess" in inserts[0]
    assert PrivateTextAccess.objects.filter(event="page").count() == 2


# --- deleting the user ---------------------------------------------------------------------------


def test_it_keeps_the_log_under_a_pseudonym_and_no_username_when_the_user_is_deleted(
    world, privileged, privileged_user, superuser
):
    from conversations.services import user_delete

    grant = open_reveal(privileged_user, reason="Ticket 88: sam asked us to check sam's plant")
    privileged.get(MEMORIES)
    sam_pk = world.sam.pk
    user_delete(user=world.sam)
    grant.refresh_from_db()
    assert grant.subject_id is None and grant.ended == "deleted" and grant.closed_at is not None
    alias = grant.subject_pseudonym
    assert alias.startswith("deleted-user-") and len(alias) == len("deleted-user-") + 20
    assert grant.reason == f"Ticket 88: {alias} asked us to check {alias}'s plant"
    rows = list(PrivateTextAccess.objects.all())
    assert [r.event for r in rows[::-1]] == ["opened", "page", "closed"]
    assert all(r.subject_id is None and r.subject_pseudonym == alias for r in rows)
    assert not PrivateTextAccess.objects.filter(subject_id=sam_pk).exists()
    for model in (RevealGrant, PrivateTextAccess):
        for values in model.objects.values():
            assert "sam" not in " ".join(
                str(v) for k, v in values.items() if k != "staff_username"
            ), values
    html = staff_client(superuser).get("/admin/support/privatetextaccess/").content.decode()
    assert alias in html


def test_it_makes_the_pseudonym_one_way_and_stable_per_account(world, alex):
    first, again, other = (
        reveals.pseudonym(world.sam),
        reveals.pseudonym(world.sam),
        reveals.pseudonym(alex.user),
    )
    assert first == again != other
    assert "sam" not in first.removeprefix("deleted-user-")
