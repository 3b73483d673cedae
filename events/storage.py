"""The feed's statement (SPEC §14 V2, `events.feed`): the events after a position that no
running transaction can precede, in feed order. See `events.feed` for why the order is
visibility's on PostgreSQL."""

from __future__ import annotations

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL

from .models import Event

# The lowest transaction of the statement's own snapshot still running that may write this
# database's events: every in-progress id of the snapshot (`pg_snapshot_xip`) but those seen,
# in pg_stat_activity, to belong to a session of another database (which cannot write here);
# none left: the snapshot's xmax. An id not seen there (ended meanwhile, or not visible to this
# role) counts as running, so the horizon is never later than pg_snapshot_xmin would make it
# for this database — only transactions of other databases stop holding the feed back.
HORIZON_SQL = """COALESCE(
    (SELECT min(running::text::bigint) FROM pg_snapshot_xip(pg_current_snapshot()) AS running
     WHERE NOT EXISTS (
         SELECT 1 FROM pg_stat_activity AS other
         WHERE other.datname IS NOT NULL AND other.datname <> current_database()
           AND other.backend_xid IS NOT NULL
           AND other.backend_xid::text::bigint = running::text::bigint %% 4294967296)),
    pg_snapshot_xmax(pg_current_snapshot())::text::bigint)"""
OWN_SQL = "pg_current_xact_id_if_assigned()::text::bigint"


def events_after(txid: int, event_id: int):
    """The events after (`txid`, `event_id`) that no running transaction can precede, in
    feed order (a queryset)."""
    qs = Event.objects.extra(
        where=['("events_event"."txid", "events_event"."id") > (%s, %s)'],
        params=[txid, event_id],
    )
    if connection.vendor == "postgresql":
        qs = qs.filter(Q(txid__lt=RawSQL(HORIZON_SQL, [])) | Q(txid=RawSQL(OWN_SQL, [])))
    return qs.order_by("txid", "id")
