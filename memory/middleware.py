"""Pages show times in the signed-in user's time zone (the memory profile's `time_zone`),
else in the product's (`settings.TIME_ZONE`). One read of the profile per signed-in page request
(kept on `request.user` for the page's other uses of it),
so a change made anywhere (the "Your data" page, an import) applies at the next page; the API
(Bearer tokens, no session) never pays for it and keeps answering in UTC (SPEC §0)."""

from __future__ import annotations

import zoneinfo

from django.utils import timezone

from .models import MemoryProfile


class UserTimeZoneMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.time_zone_chosen = False
        user = getattr(request, "user", None)
        if user is not None and not request.path.startswith("/api/") and user.is_authenticated:
            # The whole profile, kept on the user: the pages' memory switches (I8) read it too.
            profile = MemoryProfile.objects.filter(user=user).first()
            if profile is not None:
                user.memory_profile = profile
            else:  # none yet: the switches' defaults, without asking again
                user._meta.get_field("memory_profile").set_cached_value(user, None)
            name = profile.time_zone if profile is not None else ""
            if name:
                try:
                    timezone.activate(zoneinfo.ZoneInfo(name))
                    request.time_zone_chosen = True
                except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                    timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
