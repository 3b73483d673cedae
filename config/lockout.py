"""Sign-in lockout that never falls back to no limit (SPEC §12 O4, O6).

django-axes counts failed sign-ins in the shared cache (`AxesCacheHandler`), so every worker
and machine sees one count. While the shared cache is unavailable — a failed call, a timeout,
or its circuit breaker open (`config.cache`) — the same counts go to the database instead
(`AxesDatabaseHandler`: its `AccessAttempt` rows). A call that fails half way is done again
on the database, so a failure is counted at least once. When the cache answers again its
counts are used again (the database's from the outage stay for the administrator to see).
A cache that is not Redis (the database cache, a per-process one) is used as it is."""

from __future__ import annotations

from axes.handlers.base import AbstractAxesHandler, AxesBaseHandler
from axes.handlers.cache import AxesCacheHandler
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cache

from config.cache import CacheUnavailable, ResilientRedisCache, strict


class LockoutHandler(AbstractAxesHandler, AxesBaseHandler):
    def __init__(self):
        self.cache_handler = AxesCacheHandler()
        self.database_handler = AxesDatabaseHandler()

    def _call(self, name: str, *args, **kwargs):
        cache = get_cache()
        self.cache_handler.cache = cache  # the current settings' cache (tests change it)
        if not isinstance(cache, ResilientRedisCache):
            return getattr(self.cache_handler, name)(*args, **kwargs)
        if cache.available:
            try:
                with strict():
                    return getattr(self.cache_handler, name)(*args, **kwargs)
            except CacheUnavailable:
                pass
        return getattr(self.database_handler, name)(*args, **kwargs)

    def get_failures(self, request, credentials=None) -> int:
        return self._call("get_failures", request, credentials)

    def user_login_failed(self, sender, credentials, request=None, **kwargs):
        return self._call("user_login_failed", sender, credentials, request, **kwargs)

    def user_logged_in(self, sender, request, user, **kwargs):
        return self._call("user_logged_in", sender, request, user, **kwargs)

    def user_logged_out(self, sender, request, user, **kwargs):
        return self._call("user_logged_out", sender, request, user, **kwargs)

    def reset_attempts(self, **kwargs) -> int:
        return self._call("reset_attempts", **kwargs)

    def reset_logs(self, **kwargs) -> int:
        return self.database_handler.reset_logs(**kwargs)

    def reset_failure_logs(self, **kwargs) -> int:
        return self.database_handler.reset_failure_logs(**kwargs)

    def remove_out_of_limit_failure_logs(self, **kwargs) -> int:
        return self.database_handler.remove_out_of_limit_failure_logs(**kwargs)

    def post_save_access_attempt(self, instance, **kwargs):
        return self.database_handler.post_save_access_attempt(instance, **kwargs)

    def post_delete_access_attempt(self, instance, **kwargs):
        return self.database_handler.post_delete_access_attempt(instance, **kwargs)
