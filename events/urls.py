from django.urls import path

from . import api

# The runtime's API (SPEC V2), under /api/v1/ (namespace `events_api`).
api = [
    path("events", api.EventFeedApi.as_view(), name="events"),
]
