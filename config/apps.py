from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ConfigConfig(AppConfig):
    name = "config"
    verbose_name = "API access and support"

    def ready(self):
        from config import (
            checks,  # noqa: F401  (registers the system checks)
            schema,  # noqa: F401  (registers the schema extensions, SPEC C1)
        )

        post_migrate.connect(create_cache_table, sender=self)


def create_cache_table(sender, using="default", verbosity=1, **kwargs):
    """SPEC §12 O4: the database cache's table is created by `migrate` (a fresh `make run`,
    a deploy and the test database alike), so the shared cache needs no manual step. A no-op
    when the cache is Redis or the table exists."""
    from django.core.management import call_command

    call_command("createcachetable", database=using, verbosity=0)
