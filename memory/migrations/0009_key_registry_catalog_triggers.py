"""The key registry is catalog data cached per process (config.catalog): any change to it, by
any means, changes the catalog version every worker checks."""

from django.db import migrations

from config.catalog import CatalogTriggers


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_memory_settings_names"),
        ("config", "0005_catalog_version"),
    ]

    operations = [
        CatalogTriggers("memory_keydefinition"),
    ]
