"""Capabilities, product-default rules (rules without a user) and the defaults' version are
catalog data cached per process (config.catalog): any change to them, by any means, changes
the catalog version every worker checks. A user's own rules are not catalog data."""

from django.db import migrations

from config.catalog import CatalogTriggers


class Migration(migrations.Migration):
    dependencies = [
        ("policy", "0002_seed_capabilities"),
        ("config", "0005_catalog_version"),
    ]

    operations = [
        CatalogTriggers("policy_capability"),
        CatalogTriggers("policy_policyrule", null_column="user_id"),
        CatalogTriggers("policy_defaultspolicyversion"),
    ]
