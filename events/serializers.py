"""The feed's query and answer shapes (SPEC V2)."""

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from config.serializers import CleanCharField, StrictSerializer

from .outbox import EVENT_TYPES
from .schemas import EVENT_CLASSES

FEED_LIMIT_MAX = 500
FEED_LIMIT_DEFAULT = 100


class EventFeedQuery(StrictSerializer):
    after = CleanCharField(
        max_length=200,
        required=False,
        help_text="The opaque cursor `next` of the previous page; leave it out to start at the "
        "oldest event kept. A cursor older than `EVENTS_RETENTION_DAYS` answers 410 "
        "`cursor_expired`.",
    )
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=FEED_LIMIT_MAX,
        default=FEED_LIMIT_DEFAULT,
        help_text=f"At most this many events (1–{FEED_LIMIT_MAX}, default {FEED_LIMIT_DEFAULT}).",
    )
    user = CleanCharField(
        max_length=150,
        required=False,
        help_text="Only the events of this user ref (a deleted user's `user.deleted` included).",
    )
    type = serializers.ChoiceField(
        choices=EVENT_TYPES, required=False, help_text="Only events of this type."
    )


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="Event",
        serializers=EVENT_CLASSES,
        resource_type_field_name="type",
        many=True,
    )
)
class EventList(serializers.ListField):
    """The events of a page: each one `{id, type, user, occurred_at, data}`, its `data` in the
    schema of its `type` (V5). Ids, states, versions and times only (V1)."""


class EventPageOutput(serializers.Serializer):
    results = EventList()
    next = serializers.CharField(
        help_text="The cursor to pass as `after` next: after the last event answered, or the "
        "position passed in when none was. Always present."
    )
