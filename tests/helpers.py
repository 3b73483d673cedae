import pytest
from django.conf import settings

ON_POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")

# DESIGN: concurrency claims are proven with real threads on PostgreSQL; SQLite serialises
# writers, so there the same tests would prove nothing.
postgres_only = pytest.mark.skipif(
    not ON_POSTGRES, reason="needs PostgreSQL: real concurrent transactions and row locks"
)


def reseed_catalog() -> None:
    """Run the data migrations' seed functions again (each is idempotent)."""
    from importlib import import_module

    from django.apps import apps

    import_module("memory.migrations.0002_seed_keys").seed(apps, None)
    import_module("policy.migrations.0002_seed_capabilities").seed(apps, None)
    support = "config.migrations.0003_support_group"
    try:
        import_module(support).create_group(apps, None)
    except ModuleNotFoundError:
        pass
