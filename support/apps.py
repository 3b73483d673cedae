from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _sync_support_group(sender, using, **kwargs):
    """After every `migrate` (and a test database's flush), the Support group holds exactly
    `support.services.SUPPORT_GROUP_PERMISSIONS`. Django creates the permissions of every app
    before this app's signal (auth's receiver comes first, and the apps with models are listed
    before support)."""
    from django.db import router

    from .services import support_group_ensure

    if router.allow_migrate(using, "support"):
        support_group_ensure()


class SupportConfig(AppConfig):
    name = "support"
    verbose_name = "Support"

    def ready(self):
        post_migrate.connect(_sync_support_group, sender=self, dispatch_uid="support-group")
        # SPEC §9, S2: erasing a user (a service of conversations, below) erases support's part.
        from conversations import dependents

        from .services import support_user_erase

        dependents.register("user_delete", support_user_erase)
