"""The feed's query and answer shapes (SPEC V2)."""

from rest_framework import serializers

from config.serializers import CleanCharField, StrictSerializer

from .outbox import EVENT_TYPES

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


class EventOutput(serializers.Serializer):
    id = serializers.CharField(help_text="`evt_<n>`: unique, the `webhook-id` of its deliveries.")
    type = serializers.ChoiceField(
        choices=EVENT_TYPES,
        help_text="What changed: a memory created, changed or forgotten, a "
        "forget undone, the memory switches, the user's policy, a conversation or a user deleted.",
    )
    user = serializers.CharField(
        allow_null=True, help_text="The user ref; null for a change of the product defaults."
    )
    occurred_at = serializers.DateTimeField(help_text="When the change was made (database clock).")
    data = serializers.DictField(
        help_text="Ids, states, versions and times of the change (SPEC V1): never a value, "
        "message content or key. An id list holds at most 1,000 ids, sorted; a longer one is "
        "cut there and carries `<list>_count` and `<list>_truncated: true` beside it (V5): read "
        "the tombstone for the rest."
    )


class EventPageOutput(serializers.Serializer):
    results = EventOutput(many=True)
    next = serializers.CharField(
        help_text="The cursor to pass as `after` next: after the last event answered, or the "
        "position passed in when none was. Always present."
    )
