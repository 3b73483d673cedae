"""The API throttle's fixed-window counters when the shared cache is the database (SPEC §12
O4): one row per scope and token, counted by one upsert per request."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("config", "0005_catalog_version"),
    ]

    operations = [
        migrations.CreateModel(
            name="ThrottleWindow",
            fields=[
                ("key", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("window_start", models.BigIntegerField()),
                ("hits", models.PositiveIntegerField()),
            ],
        ),
    ]
