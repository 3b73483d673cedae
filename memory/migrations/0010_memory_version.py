"""A user's memory version, changed by triggers on every memory table (memory.triggers), so a
process may reuse a user's memory state while the version holds."""

from django.db import migrations, models

from memory.triggers import MemoryVersionTriggers


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0009_key_registry_catalog_triggers"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryVersion",
            fields=[
                ("user_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("version", models.BigIntegerField()),
            ],
        ),
        MemoryVersionTriggers(),
    ]
