"""I6 and I8: the pinned flag of the key registry and the two memory switches of each user."""


from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0005_pages_time_zone_templates_forgotten_by'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='keydefinition',
            name='pinned',
            field=models.BooleanField(default=False, help_text='I6: memories of a pinned key enter a plan ordered by relevance before any other.'),
        ),
        migrations.AddField(
            model_name='memoryprofile',
            name='learn',
            field=models.BooleanField(default=True),
        ),
        migrations.AddField(
            model_name='memoryprofile',
            name='settings_changed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='memoryprofile',
            name='settings_changed_by',
            field=models.CharField(blank=True, choices=[('user', 'user'), ('api', 'api'), ('support', 'support')], default='', max_length=8),
        ),
        migrations.AddField(
            model_name='memoryprofile',
            name='use',
            field=models.BooleanField(default=True),
        ),
        migrations.AddConstraint(
            model_name='memoryprofile',
            constraint=models.CheckConstraint(condition=models.Q(('settings_changed_by__in', ('', 'user', 'api', 'support'))), name='memory_profile_changed_by_valid'),
        ),
    ]
