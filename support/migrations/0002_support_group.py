"""Once created the "Support" group; the group is now kept by
`support.services.support_group_ensure` after every `migrate` (post_migrate), from the one
list `SUPPORT_GROUP_PERMISSIONS`, so its permissions are written in one place. Kept, as a
no-op, so the migration graph of existing databases is unchanged."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("support", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("memory", "0003_supersedes_restrict"),
        ("policy", "0002_seed_capabilities"),
        ("conversations", "0002_turn"),
    ]
    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
