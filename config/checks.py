"""System checks of the project's own settings."""

from django.conf import settings
from django.core.checks import Warning, register

PER_PROCESS_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)


@register(deploy=False)
def shared_cache_in_production(app_configs, **kwargs):
    """SPEC §12 O4: in production, sign-in lockout and API throttles must count across every
    worker and machine, so the cache they live in must be shared."""
    if not getattr(settings, "PRODUCTION", False):
        return []
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if backend in PER_PROCESS_CACHES:
        return [
            Warning(
                "DJANGO_ENV=production runs with a per-process cache: sign-in lockout and API "
                "throttles would count per worker.",
                hint="Unset CACHE_URL (the database cache) or point it at Redis (redis://…).",
                id="companion.W001",
            )
        ]
    return []
