"""S1/S2: reveals (`RevealGrant`: one staff member, one user, a reason, a time box) and the
access log's new shape — one row per reveal event or per page drawn under a reveal, kept (with
a pseudonym in place of the user) when the user is deleted. Rows logged before reveals existed
stay as they were (one per object shown, no grant). The permission's name now says what it
grants."""

import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models


PERMISSION_NAME = (
    "Can open a reveal of one user's private text (S1); every page it shows is logged"
)


def rename_permission(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.using(schema_editor.connection.alias).filter(
        content_type__app_label="support",
        codename="view_private_text",
    ).update(name=PERMISSION_NAME)


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("support", "0003_support_sees_memory_settings"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="privatetextaccess",
            options={
                "ordering": ["-accessed_at", "-id"],
                "permissions": [
                    ("view_private_text", PERMISSION_NAME),
                ],
                "verbose_name": "private text access",
                "verbose_name_plural": "private text access log",
            },
        ),
        migrations.AddField(
            model_name="privatetextaccess",
            name="event",
            field=models.CharField(
                choices=[
                    ("opened", "reveal opened"),
                    ("extended", "reveal extended"),
                    ("closed", "reveal closed"),
                    ("expired", "reveal expired"),
                    ("page", "page showed private text"),
                ],
                default="page",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="privatetextaccess",
            name="shown",
            field=models.PositiveIntegerField(
                default=1, help_text="How many objects' private text the page showed."
            ),
        ),
        migrations.AddField(
            model_name="privatetextaccess",
            name="subject_pseudonym",
            field=models.CharField(blank=True, max_length=40),
        ),
        migrations.AlterField(
            model_name="privatetextaccess",
            name="content_type",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="contenttypes.contenttype",
            ),
        ),
        migrations.AlterField(
            model_name="privatetextaccess",
            name="object_id",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name="privatetextaccess",
            name="view",
            field=models.CharField(
                blank=True,
                choices=[
                    ("changelist", "changelist"),
                    ("change", "change page"),
                    ("explain", "explain view"),
                    ("action", "action confirmation"),
                ],
                max_length=12,
            ),
        ),
        migrations.CreateModel(
            name="RevealGrant",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("staff_username", models.CharField(max_length=150)),
                (
                    "subject_pseudonym",
                    models.CharField(
                        blank=True,
                        help_text="Set when the user was deleted: a one-way pseudonym.",
                        max_length=40,
                    ),
                ),
                ("reason", models.TextField()),
                ("opened_at", models.DateTimeField()),
                ("expires_at", models.DateTimeField()),
                ("closed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "ended",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("closed", "closed by the staff member"),
                            ("expired", "expired"),
                            ("replaced", "closed by a reveal of another user"),
                            ("deleted", "closed because the user was deleted"),
                        ],
                        max_length=10,
                    ),
                ),
                (
                    "staff",
                    models.ForeignKey(
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "subject",
                    models.ForeignKey(
                        db_constraint=False,
                        help_text="The user whose private text the reveal shows.",
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "reveal",
                "ordering": ["-opened_at", "-id"],
            },
        ),
        migrations.AddField(
            model_name="privatetextaccess",
            name="grant",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="events",
                to="support.revealgrant",
            ),
        ),
        migrations.AddIndex(
            model_name="privatetextaccess",
            index=models.Index(fields=["subject", "-accessed_at"], name="access_subject_time"),
        ),
        migrations.AddIndex(
            model_name="revealgrant",
            index=models.Index(fields=["subject", "-opened_at"], name="reveal_subject_time"),
        ),
        migrations.AddConstraint(
            model_name="revealgrant",
            constraint=models.UniqueConstraint(
                condition=models.Q(("closed_at__isnull", True)),
                fields=("staff",),
                name="reveal_one_open_per_staff",
            ),
        ),
        migrations.RunPython(rename_permission, migrations.RunPython.noop),
    ]
