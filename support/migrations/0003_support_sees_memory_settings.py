"""Once created the "Support" group; the group is now kept by
`support.services.support_group_ensure` after every `migrate` (post_migrate), from the one
list `SUPPORT_GROUP_PERMISSIONS`, so its permissions are written in one place. Kept, as a
no-op, so the migration graph of existing databases is unchanged."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("support", "0002_support_group"),
        ("memory", "0008_memory_settings_names"),
    ]
    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
