"""The pages' additions: a sentence template per registered key (seeded for the SPEC §8 keys),
the user's time zone on the memory profile, and who made a forget (the user or support on the
user's behalf)."""

from django.db import migrations, models

import memory.models

TEMPLATES = {
    "user.preferred_name": "You like to be called {value}",
    "user.avoid_nickname": "You don't want to be called {value}",
    "user.likes": "You like {value}",
    "user.dislikes": "You dislike {value}",
    "user.lives_in": "You live in {value}",
    "user.works_at": "You work at {value}",
    "basil_plant.name": "Your basil plant is called {value}",
    "dog.name": "Your dog is called {value}",
    "cat.name": "Your cat is called {value}",
}


def seed(apps, schema_editor):
    KeyDefinition = apps.get_model("memory", "KeyDefinition")
    for key, template in TEMPLATES.items():
        # Only where nobody wrote one yet: an operator's own sentence stays.
        KeyDefinition.objects.filter(key=key, template="").update(template=template)


def unseed(apps, schema_editor):
    KeyDefinition = apps.get_model("memory", "KeyDefinition")
    for key, template in TEMPLATES.items():
        KeyDefinition.objects.filter(key=key, template=template).update(template="")


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_memory_user_recorded_index")]

    operations = [
        migrations.AddField(
            model_name="keydefinition",
            name="template",
            field=models.CharField(
                blank=True, default="", max_length=200, validators=[memory.models.validate_template],
                help_text="A sentence for the pages with {value} once, e.g. “Your basil plant is called "
                          "{value}”. Leave blank to show the label and the value apart.",
            ),
        ),
        migrations.AddField(
            model_name="memoryprofile",
            name="time_zone",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="tombstone",
            name="forgotten_by",
            field=models.CharField(choices=[("user", "user"), ("support", "support")], default="user", max_length=8),
        ),
        migrations.AddConstraint(
            model_name="tombstone",
            constraint=models.CheckConstraint(
                condition=models.Q(forgotten_by__in=("user", "support")), name="tombstone_forgotten_by_valid"
            ),
        ),
        migrations.RunPython(seed, unseed),
    ]
