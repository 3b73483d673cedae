"""The outbox and the webhooks (SPEC §14, V1–V3).

`Event` is written in the transaction of the change it reports (V1). On PostgreSQL each row
keeps the id of the transaction that wrote it (`pg_current_xact_id()`, an xid8, as a bigint):
the feed orders by (transaction, id) and hands out only what no running transaction can
precede (`events.feed`, docs/DECISIONS.md). SQLite serialises writers, so there the column is
0 and id order is visibility order (an AUTOINCREMENT key never reuses an id)."""

from __future__ import annotations

from django.db import models
from django.db.models import BigIntegerField, Func


class WritingTransaction(Func):
    """The writing transaction's id, as the column's database default: on PostgreSQL the
    top-level transaction's xid8 (the same in every savepoint), elsewhere 0."""

    output_field = BigIntegerField()
    arity = 0

    def as_sql(self, compiler, connection, **extra_context):
        return "0", []

    def as_postgresql(self, compiler, connection, **extra_context):
        return "(pg_current_xact_id()::text::bigint)", []


class Event(models.Model):
    """One change a copy outside this service must follow (V1). `user_ref` is the user's ref,
    not a foreign key: `user.deleted` outlives its user. `data` holds ids, states, versions
    and times only — never private text (§12)."""

    id = models.BigAutoField(primary_key=True)
    type = models.CharField(max_length=40)
    user_ref = models.CharField(max_length=150, blank=True, default="")
    occurred_at = models.DateTimeField()
    data = models.JSONField(default=dict)
    txid = models.BigIntegerField(db_default=WritingTransaction(), editable=False)

    class Meta:
        ordering = ["txid", "id"]
        indexes = [
            models.Index(fields=["txid", "id"], name="event_visibility"),
            models.Index(fields=["user_ref", "txid", "id"], name="event_user_visibility"),
            # `?type=` of a rare type (user.deleted) walks this instead of the whole feed.
            models.Index(fields=["type", "txid", "id"], name="event_type_visibility"),
            models.Index(fields=["occurred_at"], name="event_occurred"),
        ]

    def __str__(self) -> str:
        return f"evt_{self.pk} {self.type}"

    @property
    def public_id(self) -> str:
        return f"evt_{self.pk}"


class WebhookEndpoint(models.Model):
    """A receiver registered by staff (V3): its URL, the event types it takes (empty: all),
    optionally one user. The signing secret is shown once, when the endpoint is created."""

    url = models.URLField(max_length=500)
    event_types = models.JSONField(default=list, blank=True)
    user_ref = models.CharField(max_length=150, blank=True, default="")
    secret = models.CharField(max_length=100, editable=False)
    description = models.CharField(max_length=200, blank=True, default="")
    enabled = models.BooleanField(default=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.url

    def takes(self, event: Event) -> bool:
        return (not self.event_types or event.type in self.event_types) and (
            not self.user_ref or event.user_ref == self.user_ref
        )


class Lane(models.Model):
    """The deliveries of one endpoint for one user, sent in event order (V3): at most one
    worker holds a lane at a time (`lease_until`), so a user's events never overtake."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="lanes")
    user_ref = models.CharField(max_length=150, blank=True, default="")
    # A failed delivery holds the whole lane until its next attempt (backoff).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    leased_by = models.CharField(max_length=40, blank=True, default="")
    woken_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "user_ref"], name="lane_unique")]

    def __str__(self) -> str:
        return f"{self.endpoint} for {self.user_ref or 'the product defaults'}"


class Delivery(models.Model):
    PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
    STATUSES = [(PENDING, "pending"), (DELIVERED, "delivered"), (FAILED, "failed")]

    lane = models.ForeignKey(Lane, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    first_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "deliveries"
        ordering = ["event__txid", "event_id"]
        constraints = [models.UniqueConstraint(fields=["lane", "event"], name="delivery_unique")]
        indexes = [models.Index(fields=["lane", "status"], name="delivery_lane_status")]

    def __str__(self) -> str:
        return f"evt_{self.event_id} → endpoint {self.lane.endpoint_id}"


class DeliveryAttempt(models.Model):
    """One POST (V3): its answer's status, its latency and a short error — never a secret, a
    body or a header."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempts_log")
    at = models.DateTimeField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.status_code or self.error}"


class DispatchPosition(models.Model):
    """Where the worker's dispatcher stands in the feed (one row): it follows the feed like
    any reader, so an event becomes deliveries exactly when it is visible."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    txid = models.BigIntegerField(default=0)
    event_id = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"dispatched up to ({self.txid}, {self.event_id})"
