"""Seed the capability catalog (SPEC §6), each with the question the companion asks on ASK,
and the product defaults' policy version row (D7). No rules are seeded: a capability with no
applicable rule is asked about (D2)."""

from django.db import migrations

CAPABILITIES = [
    ("tone.playful", "Would you like me to be more playful with you?"),
    ("topic.work", "Is it all right if we talk about your work?"),
    ("relationship.advance", "Would you like our relationship to grow closer?"),
    ("media.voice", "May I send you voice messages?"),
    ("media.image", "May I send you images?"),
]


def seed(apps, schema_editor):
    Capability = apps.get_model("policy", "Capability")
    for name, question in CAPABILITIES:
        Capability.objects.update_or_create(name=name, defaults={"question": question})
    apps.get_model("policy", "DefaultsPolicyVersion").objects.get_or_create(pk=1, defaults={"version": 0})


def unseed(apps, schema_editor):
    apps.get_model("policy", "Capability").objects.filter(name__in=[n for n, _ in CAPABILITIES]).delete()


class Migration(migrations.Migration):
    dependencies = [("policy", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
