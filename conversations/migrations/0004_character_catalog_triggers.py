"""Characters are catalog data cached per process (config.catalog): any change to them, by
any means, changes the catalog version every worker checks."""

from django.db import migrations

from config.catalog import CatalogTriggers


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0003_turn_learning"),
        ("config", "0005_catalog_version"),
    ]

    operations = [
        CatalogTriggers("conversations_character"),
    ]
