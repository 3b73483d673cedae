"""I6: the user's preferred name is pinned, so a plan ordered by relevance always offers it
first (support may pin or unpin keys in the admin)."""

from django.db import migrations

PINNED = ["user.preferred_name"]


def seed(apps, schema_editor):
    KeyDefinition = apps.get_model("memory", "KeyDefinition")
    KeyDefinition.objects.filter(key__in=PINNED).update(pinned=True)


def unseed(apps, schema_editor):
    apps.get_model("memory", "KeyDefinition").objects.filter(key__in=PINNED).update(pinned=False)


class Migration(migrations.Migration):
    dependencies = [("memory", "0006_memory_switches_and_pinned_keys")]
    operations = [migrations.RunPython(seed, unseed)]
