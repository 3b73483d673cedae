"""The support logs, taken over from `config` (whose migration 0004 renamed their tables):
the models enter this app's state without touching the tables, and the content types — with
the permissions that hang on them, as granted to the Support group and to staff members —
are re-labelled from `config` to `support`, so every grant and every logged row carries over."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ("privatetextaccess", "supportaction")


def relabel(apps, schema_editor, old="config", new="support"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    db = schema_editor.connection.alias
    for model in MODELS:
        source = ContentType.objects.using(db).filter(app_label=old, model=model).first()
        if source is None:
            continue
        target = ContentType.objects.using(db).filter(app_label=new, model=model).first()
        if target is None:
            source.app_label = new
            source.save(update_fields=["app_label"])
            continue
        # Both exist (a content type was created for the new label already): keep the target,
        # move the permissions it lacks, drop the source.
        have = set(Permission.objects.using(db).filter(content_type=target).values_list("codename", flat=True))
        Permission.objects.using(db).filter(content_type=source).exclude(codename__in=have).update(content_type=target)
        source.delete()


def unlabel(apps, schema_editor):
    relabel(apps, schema_editor, old="support", new="config")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("config", "0004_move_support_logs"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
        migrations.CreateModel(
            name='PrivateTextAccess',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('staff_username', models.CharField(max_length=150)),
                ('object_id', models.CharField(max_length=64)),
                ('view', models.CharField(choices=[('changelist', 'changelist'), ('change', 'change page'), ('explain', 'explain view'), ('action', 'action confirmation')], max_length=12)),
                ('accessed_at', models.DateTimeField()),
                ('content_type', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='contenttypes.contenttype')),
                ('staff', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('subject', models.ForeignKey(db_constraint=False, help_text='The user whose text was shown.', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'private text reveal',
                'ordering': ['-accessed_at', '-id'],
                'permissions': [('view_private_text', "Can see users' private text (memory values, messages, titles); each view is logged")],
                'indexes': [models.Index(fields=['content_type', 'object_id'], name='reveal_object'), models.Index(fields=['staff', '-accessed_at'], name='reveal_staff_time')],
            },
        ),
        migrations.CreateModel(
            name='SupportAction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('staff_username', models.CharField(max_length=150)),
                ('action', models.CharField(choices=[('forget', "forget on the user's behalf"), ('retract', 'retract'), ('normalise', 'normalise statuses'), ('revoke-rule', 'revoke rule')], max_length=12)),
                ('object_id', models.CharField(max_length=64)),
                ('reason', models.TextField()),
                ('outcome', models.CharField(help_text='done, or why it was skipped.', max_length=20)),
                ('detail', models.JSONField(blank=True, default=dict)),
                ('acted_at', models.DateTimeField()),
                ('content_type', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='contenttypes.contenttype')),
                ('staff', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('subject', models.ForeignKey(db_constraint=False, help_text='The user the action was for (none for a product default).', null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-acted_at', '-id'],
                'permissions': [('forget_memory', "Can forget a memory on the user's behalf"), ('retract_memory', 'Can retract a memory slot'), ('normalise_memory', 'Can normalise stored memory statuses'), ('revoke_rule', 'Can revoke a boundary rule'), ('use_explain', 'Can use the support explain view')],
                'indexes': [models.Index(fields=['subject', '-acted_at'], name='support_action_subject'), models.Index(fields=['content_type', 'object_id'], name='support_action_object')],
            },
        ),
            ],
        ),
        migrations.RunPython(relabel, unlabel),
    ]
