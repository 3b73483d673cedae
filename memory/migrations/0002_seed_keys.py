"""Seed the key registry with the keys the extractor uses (SPEC §8)."""

from django.db import migrations

KEYS = [
    ("user.preferred_name", "one", "Preferred name"),
    ("user.avoid_nickname", "many", "Don't call me"),
    ("user.likes", "many", "Likes"),
    ("user.dislikes", "many", "Dislikes"),
    ("user.lives_in", "one", "Lives in"),
    ("user.works_at", "one", "Works at"),
    ("basil_plant.name", "one", "Basil plant's name"),
    ("dog.name", "one", "Dog's name"),
    ("cat.name", "one", "Cat's name"),
]


def seed(apps, schema_editor):
    KeyDefinition = apps.get_model("memory", "KeyDefinition")
    for key, cardinality, label in KEYS:
        KeyDefinition.objects.update_or_create(key=key, defaults={"cardinality": cardinality, "label": label})


def unseed(apps, schema_editor):
    apps.get_model("memory", "KeyDefinition").objects.filter(key__in=[k for k, _, _ in KEYS]).delete()


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
