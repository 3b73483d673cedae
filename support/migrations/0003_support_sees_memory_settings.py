"""The Support group may see users' memory settings (I8: the switches, who changed them and
when), which became visible in the admin."""

from django.contrib.auth.management import create_permissions
from django.db import migrations


def grant(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="Support")
    group.permissions.add(Permission.objects.get(content_type__app_label="memory", codename="view_memoryprofile"))


class Migration(migrations.Migration):
    dependencies = [
        ("support", "0002_support_group"),
        ("memory", "0008_memory_settings_names"),
    ]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
