"""V2: the feed, in the order events became visible.

On PostgreSQL an event is handed out only once no running transaction can precede it: its
writing transaction's id is below the lowest id still running in the statement's snapshot
(every transaction below it has ended, and none can start below it) — leaving out the running
transactions of other databases of the cluster, which cannot write this one's events — ordered
by (transaction id, event id). A transaction
that commits late therefore holds the feed back instead of being overtaken. A transaction also
sees its own events (a test's transaction; the API's reads write none). SQLite serialises
writers: the transaction id is 0 there and id order is visibility order.

The cursor is opaque to readers: the position (transaction id, event id) and the time it was
handed out; one older than `EVENTS_RETENTION_DAYS` is refused (`cursor_expired`), since the
events after it may have been pruned."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from config.clock import iso_z
from config.errors import CursorExpired, ValidationError

from .storage import events_after

CURSOR_VERSION = "1"


@dataclass(frozen=True)
class Position:
    txid: int = 0
    event_id: int = 0


@dataclass
class FeedPage:
    events: list[dict]
    next: str


def retention() -> timedelta:
    return timedelta(days=settings.EVENTS_RETENTION_DAYS)


def encode_cursor(position: Position, issued: datetime) -> str:
    raw = f"{CURSOR_VERSION}.{position.txid}.{position.event_id}.{int(issued.timestamp())}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *, now: datetime) -> Position:
    """The position a cursor names; `ValidationError` for one this service did not hand out,
    `CursorExpired` for one older than the retention (V2)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        version, txid, event_id, issued = raw.split(".")
        position = Position(int(txid), int(event_id))
        issued_at = datetime.fromtimestamp(int(issued), UTC)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError, OSError):
        raise ValidationError("Not a cursor this feed handed out.", field="after") from None
    if version != CURSOR_VERSION or position.txid < 0 or position.event_id < 0:
        raise ValidationError("Not a cursor this feed handed out.", field="after")
    if issued_at < now - retention():
        raise CursorExpired(
            f"This cursor is older than the {settings.EVENTS_RETENTION_DAYS} days events are "
            "kept: events after it may be gone. Resync from the export, then follow the feed "
            "from a new cursor."
        )
    return position


def visible_after(position: Position):
    """The events after `position` that no running transaction can precede, in feed order."""
    return events_after(position.txid, position.event_id)


def event_json(e: dict) -> dict:
    """An event as the feed and the webhooks send it (V1)."""
    return {
        "id": f"evt_{e['id']}",
        "type": e["type"],
        "user": e["user_ref"] or None,
        "occurred_at": iso_z(e["occurred_at"]),
        "data": e["data"],
    }


def feed_page(
    *, after: str | None, limit: int, user: str | None = None, type_: str | None = None
) -> FeedPage:
    """V2: one page of the feed after the cursor `after` (the beginning of what is kept when
    None): one query."""
    now = timezone.now()
    position = decode_cursor(after, now=now) if after else Position()
    qs = visible_after(position)
    if user:
        qs = qs.filter(user_ref=user)
    if type_:
        qs = qs.filter(type=type_)
    rows = list(qs.values("id", "type", "user_ref", "occurred_at", "data", "txid")[:limit])
    if rows:
        position = Position(rows[-1]["txid"], rows[-1]["id"])
    return FeedPage([event_json(r) for r in rows], encode_cursor(position, now))
