"""The "Support" group: view permissions on the models support staff need to answer
tickets, the explain view and the four support actions. Not `view_private_text`: reading a
user's private text is granted person by person, and every reveal is logged.

A snapshot of `support.services.SUPPORT_GROUP_PERMISSIONS` at the time of writing (a migration
must not import code that may change); a test checks the two agree."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

PERMISSIONS = [
    ("auth", "view_user"),
    ("memory", "view_memoryrecord"),
    ("memory", "view_keydefinition"),
    ("memory", "view_tombstone"),
    ("memory", "view_slotretraction"),
    ("memory", "view_idempotencyrecord"),
    ("policy", "view_policyrule"),
    ("policy", "view_capability"),
    ("policy", "view_userpolicyversion"),
    ("policy", "view_defaultspolicyversion"),
    ("policy", "view_decisionlog"),
    ("policy", "view_policyanswer"),
    ("policy", "view_mediajob"),
    ("conversations", "view_character"),
    ("conversations", "view_conversation"),
    ("conversations", "view_turn"),
    ("conversations", "view_message"),
    ("support", "view_supportaction"),
    ("support", "use_explain"),
    ("support", "forget_memory"),
    ("support", "retract_memory"),
    ("support", "normalise_memory"),
    ("support", "revoke_rule"),
]


def create_group(apps, schema_editor):
    # Permissions are normally created after the last migration (post_migrate); this one needs
    # them now, including those of the models created in this very run.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="Support")
    for app_label, codename in PERMISSIONS:
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


class Migration(migrations.Migration):
    dependencies = [
        ("support", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("memory", "0003_supersedes_restrict"),
        ("policy", "0002_seed_capabilities"),
        ("conversations", "0002_turn"),
    ]
    operations = [migrations.RunPython(create_group, migrations.RunPython.noop)]
