"""Each record, tombstone and retraction carries the user's memory version at which it last
changed, and each user's version row the version of the last removal (memory.triggers), so a
process holding a state at a version catches it up with what changed after it. The triggers
are dropped first: SQLite rebuilds a table to add a column, and their new form is created
last."""

from django.db import migrations, models

from memory.triggers import DropMemoryVersionTriggers, MemoryVersionTriggers


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0011_withholding"),
    ]

    operations = [
        DropMemoryVersionTriggers(),
        migrations.AddField(
            model_name="memoryrecord",
            name="changed_version",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="tombstone",
            name="changed_version",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="slotretraction",
            name="changed_version",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="memoryversion",
            name="removed_version",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddIndex(
            model_name="memoryrecord",
            index=models.Index(fields=["user", "changed_version"], name="memory_user_changed"),
        ),
        # A state some process kept before this migration is read again whole.
        migrations.RunSQL(
            "UPDATE memory_memoryversion SET removed_version = version", migrations.RunSQL.noop
        ),
        MemoryVersionTriggers(),
    ]
