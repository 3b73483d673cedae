"""`manage.py load_demo`, what `make run` loads on every start: the demo is built when its user
is not there; on a later start the user is kept with everything they did — confirmations,
forgets, boundaries, switches — and only gets a new password, so no `user.deleted` event (V1)
appears and no support reveal (S1) is closed; `--reset` (`make run DEMO=reset`) starts over."""

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from events.models import Event
from memory.forgetting import memory_forget
from memory.models import MemoryProfile, MemoryRecord, Tombstone
from memory.services.profile import memory_settings_set
from support.reveals import reveal_open
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

NAME = "demo-keep"


def load(*args: str) -> str:
    out = StringIO()
    call_command("load_demo", f"--username={NAME}", *args, stdout=out)
    return out.getvalue()


def password_of(output: str) -> str:
    [password] = re.findall(rf"Sign in at \S+/login/ as '{NAME}' with password '([^']+)'", output)
    return password


def demo_user():
    return get_user_model().objects.get(username=NAME)


def test_it_builds_the_demo_when_its_user_is_not_there():
    output = load("--address=http://127.0.0.1:8123")
    user = demo_user()
    assert output.splitlines()[0] == "Demo data ready."
    assert re.search(rf"continuity scenario for '{NAME}': (\d+)/\1 checks passed", output)
    assert user.check_password(password_of(output))
    assert f"Sign in at http://127.0.0.1:8123/login/ as '{NAME}'" in output
    assert MemoryRecord.objects.filter(user=user).exists()


def test_it_keeps_the_demo_user_on_a_later_load_with_a_new_password_that_signs_in():
    first = password_of(load())
    user = demo_user()
    output = load()
    second = password_of(output)
    kept = demo_user()
    assert kept.pk == user.pk and kept.date_joined == user.date_joined
    assert second != first
    assert kept.check_password(second) and not kept.check_password(first)
    assert (
        f"kept '{NAME}' as they left it, with a new password (make run DEMO=reset starts the "
        "demo over)" in output
    )


def test_it_keeps_a_forget_a_switch_and_an_open_reveal_across_a_second_load():
    """V1, S1: the second load deletes nothing, so it writes no event at all — no
    `user.deleted` — and the reveal support opened stays open."""
    load()
    user = demo_user()
    record = MemoryRecord.objects.filter(user=user, status="active").order_by("key").first()
    tombstone = memory_forget(record_id=record.id, user=user)
    memory_settings_set(user=user, changed_by="user", learn=False)
    staff = UserFactory(username="support-sol", is_staff=True, is_superuser=True)
    reveal = reveal_open(staff=staff, user=NAME, reason="Ticket 4242: the demo user asked us.")
    events = list(Event.objects.order_by("id").values_list("id", "type"))

    load()

    assert Tombstone.objects.filter(pk=tombstone.pk, user=user).exists()
    assert MemoryRecord.objects.get(pk=record.pk).status == "forgotten"
    assert MemoryProfile.objects.get(user=user).learn is False
    reveal.refresh_from_db()
    assert (reveal.closed_at, reveal.ended) == (None, "")
    assert list(Event.objects.order_by("id").values_list("id", "type")) == events
    assert not Event.objects.filter(type="user.deleted").exists()


def test_it_starts_the_demo_over_with_reset():
    """`make run DEMO=reset`: the user is deleted (V1: one `user.deleted`) and built again, so
    the forget made since is gone with them."""
    load()
    user = demo_user()
    built = Tombstone.objects.filter(user=user).count()
    record = MemoryRecord.objects.filter(user=user, status="active").order_by("key").first()
    memory_forget(record_id=record.id, user=user)

    output = load("--reset")

    again = demo_user()
    assert again.pk != user.pk
    assert Tombstone.objects.filter(user=again).count() == built
    assert list(Event.objects.filter(type="user.deleted").values_list("user_ref", flat=True)) == [
        NAME
    ]
    assert again.check_password(password_of(output))


def test_it_gives_the_demos_events_the_records_own_times():
    """V5: the demo's events carry the times of the demo's records (moved onto its evenings),
    not the time it was loaded: a record's `memory.created` its `recorded_at` and
    `valid_from`, a forget's `memory.forgotten` its `forgotten_at`, a retraction its
    `retracted_at`."""
    load()
    user = demo_user()
    z = lambda moment: moment.isoformat().replace("+00:00", "Z")  # noqa: E731
    records = {str(r.pk): r for r in MemoryRecord.objects.filter(user=user)}
    tombstones = {str(t.pk): t for t in Tombstone.objects.filter(user=user)}
    seen = set()
    for event in Event.objects.filter(user_ref=NAME):
        if event.type == "memory.created":
            record = records[event.data["memory"]]
            assert event.occurred_at == record.recorded_at
            assert event.data["valid_from"] == z(record.valid_from)
        elif event.type == "memory.forgotten":
            assert event.occurred_at == tombstones[event.data["tombstone"]].forgotten_at
        elif event.type == "memory.changed" and "retracted_at" in event.data:
            assert event.data["retracted_at"] == z(records[event.data["memory"]].retracted_at)
        else:
            continue
        seen.add(event.type)
    assert seen >= {"memory.created", "memory.forgotten"}
