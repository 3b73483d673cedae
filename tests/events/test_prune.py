"""SPEC V2: events are kept EVENTS_RETENTION_DAYS; pruning (the worker hourly, or
`manage.py prune_events`) deletes older ones with their deliveries, an hour after the
retention so a transaction open that long still finds its events."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from events import delivery
from events.models import Delivery, Event, Lane, WebhookEndpoint

pytestmark = pytest.mark.django_db


def event_at(at):
    return Event.objects.create(
        type="settings.changed",
        user_ref="sam",
        occurred_at=at,
        data={"learn": True, "use": True, "changed_by": "api"},
    )


def test_it_deletes_events_past_the_retention_and_its_margin_with_their_deliveries(settings):
    settings.EVENTS_RETENTION_DAYS = 7
    now = timezone.now()
    old = event_at(now - timedelta(days=7, hours=1, seconds=1))
    margin = event_at(now - timedelta(days=7, minutes=59))
    kept = event_at(now - timedelta(days=1))
    endpoint = WebhookEndpoint.objects.create(
        url="https://hooks.example.com/in", secret="whsec_x", created_at=now
    )
    lane = Lane.objects.create(endpoint=endpoint, user_ref="sam")
    Delivery.objects.create(lane=lane, event=old)
    Delivery.objects.create(lane=lane, event=kept)
    assert delivery.prune(now) == 1
    assert list(Event.objects.order_by("id").values_list("id", flat=True)) == [margin.pk, kept.pk]
    assert list(Delivery.objects.values_list("event_id", flat=True)) == [kept.pk]


def test_it_prunes_from_the_command_too(settings, capsys):
    settings.EVENTS_RETENTION_DAYS = 1
    event_at(timezone.now() - timedelta(days=2))
    call_command("prune_events")
    assert not Event.objects.exists()
    assert "Deleted 1 events" in capsys.readouterr().out
