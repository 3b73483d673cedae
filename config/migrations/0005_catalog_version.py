"""The catalog version (config.catalog): its one row and PostgreSQL's trigger function. The
apps owning catalog tables add the triggers in their own migrations."""

from django.db import migrations, models

from config.catalog import CatalogFunction


def seed(apps, schema_editor):
    apps.get_model("config", "CatalogVersion").objects.get_or_create(pk=1, defaults={"version": 1})


class Migration(migrations.Migration):
    dependencies = [
        ("config", "0004_move_support_logs"),
    ]

    operations = [
        migrations.CreateModel(
            name="CatalogVersion",
            fields=[
                ("id", models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                ("version", models.BigIntegerField(default=0)),
            ],
            options={
                "constraints": [models.CheckConstraint(condition=models.Q(("id", 1)), name="catalog_version_singleton")],
            },
        ),
        migrations.RunPython(seed, migrations.RunPython.noop),
        CatalogFunction(),
    ]
