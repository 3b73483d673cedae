"""I8: whether the `learn` switch was on when a turn was created."""


from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0002_turn'),
    ]

    operations = [
        migrations.AddField(
            model_name='turn',
            name='learning',
            field=models.BooleanField(default=True),
        ),
    ]
