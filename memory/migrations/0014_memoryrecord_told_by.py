"""SPEC §15 M3: a record carries the connection that told it (its id and the name it had),
beside its source messages, so P1 admits it and an export needs no connection row. The
triggers are dropped first: SQLite rebuilds a table to add a column, and they are created
again last."""

from django.db import migrations, models

from memory.triggers import (
    DropMemoryLinkTriggers,
    DropMemoryVersionTriggers,
    MemoryLinkTriggers,
    MemoryVersionTriggers,
)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0013_memory_withholding"),
    ]

    operations = [
        DropMemoryLinkTriggers(),
        DropMemoryVersionTriggers(),
        migrations.AddField(
            model_name="memoryrecord",
            name="told_by_connection",
            field=models.CharField(blank=True, default="", max_length=36),
        ),
        migrations.AddField(
            model_name="memoryrecord",
            name="told_by_name",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        MemoryVersionTriggers(),
        MemoryLinkTriggers(),
    ]
