"""F7.2: a forget withholds other memories of the user that hold a purged value (the
tombstone-to-record links), and a link written or deleted stamps its record
(memory.triggers), so a held state re-reads it."""

import django.db.models.deletion
from django.db import migrations, models

from memory.triggers import MemoryLinkTriggers


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0012_changed_version"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryWithholding",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "memory",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="withholdings",
                        to="memory.memoryrecord",
                    ),
                ),
                (
                    "tombstone",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memory_withholdings",
                        to="memory.tombstone",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tombstone", "memory"), name="memory_withholding_unique"
                    )
                ],
            },
        ),
        MemoryLinkTriggers(),
    ]
