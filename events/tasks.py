"""The webhook deliveries' task on Django's tasks API (the django-tasks backport; its database
backend keeps the queue in this database, run by `manage.py events_worker`)."""

from __future__ import annotations

from datetime import datetime

from django_tasks import task

from . import delivery

QUEUE = "webhooks"


@task(queue_name=QUEUE)
def deliver(lane_id: int) -> int:
    """Send one lane's pending deliveries in order (`events.delivery.deliver_lane`)."""
    return delivery.deliver_lane(lane_id, enqueue)


def enqueue(lane_id: int, run_after: datetime | None = None) -> None:
    (deliver.using(run_after=run_after) if run_after is not None else deliver).enqueue(lane_id)
