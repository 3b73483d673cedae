"""The event feed (SPEC §14 V2): validate the query, call the feed selector, answer."""

from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import operation, query_params, validated

from .feed import feed_page
from .serializers import EventFeedQuery, EventPageOutput


class EventFeedApi(APIView):
    @operation("event_feed", {200: EventPageOutput}, 400, 410, parameters=[EventFeedQuery])
    def get(self, request):
        """Follow every change, in the order it became visible

        The events every change leaves (SPEC V1: `memory.created`, `memory.changed`,
        `memory.forgotten`, `tombstone.deleted`, `settings.changed`, `policy.changed`,
        `conversation.deleted`, `user.deleted`), oldest first in the order they became visible (V2).
        Pass `next` as `after` to read on: a reader that always does sees every event at least once
        and in order, also while writers commit concurrently. `data` holds ids, states, versions and
        times only. Events are kept `EVENTS_RETENTION_DAYS` (7 by default); an older cursor answers
        410 `cursor_expired`."""
        params = validated(EventFeedQuery, query_params(request))
        page = feed_page(
            after=params.get("after"),
            limit=params["limit"],
            user=params.get("user"),
            type_=params.get("type"),
        )
        return Response({"results": page.events, "next": page.next})
