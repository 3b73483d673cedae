"""The support logs (DESIGN, Privacy): who was shown which user's private text, and every
support action with the reason the staff member gave. Written only by `support.services`;
read-only in the admin.

Both tables kept the rows they had when they moved here from `config` (the tables were renamed
by `config.0004`, the content types and permissions re-labelled by `support.0001`)."""

from django.conf import settings
from django.db import models


class PrivateTextAccess(models.Model):
    """The access log of the admin (DESIGN, Privacy): one row each time a staff member's page
    rendered a user's private text (a memory value, a message, a conversation title) unmasked —
    who, which object (content type + id), where and when. Written only by `support.services`;
    read-only in the admin.

    The users are referenced without a database constraint and without cascades: a log row
    outlives the staff account and the end user (deleting either must neither fail on the log nor
    silently erase it), and deleting a user stays a plain cascade with no extra queries."""

    VIEWS = [
        ("changelist", "changelist"),
        ("change", "change page"),
        ("explain", "explain view"),
        ("action", "action confirmation"),
    ]

    staff = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    staff_username = models.CharField(max_length=150)
    subject = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+",
        help_text="The user whose text was shown.",
    )
    content_type = models.ForeignKey("contenttypes.ContentType", on_delete=models.PROTECT, related_name="+")
    object_id = models.CharField(max_length=64)
    view = models.CharField(max_length=12, choices=VIEWS)
    accessed_at = models.DateTimeField()

    class Meta:
        ordering = ["-accessed_at", "-id"]
        verbose_name = "private text reveal"
        permissions = [
            ("view_private_text", "Can see users' private text (memory values, messages, titles); each view is logged"),
        ]
        indexes = [
            models.Index(fields=["content_type", "object_id"], name="reveal_object"),
            models.Index(fields=["staff", "-accessed_at"], name="reveal_staff_time"),
        ]

    def __str__(self) -> str:
        return f"{self.staff_username} saw {self.content_type_id}:{self.object_id}"


class SupportAction(models.Model):
    """One support action (forget, retract, revoke, normalise) on one object, with the reason
    the staff member gave (required). The action itself ran through the owning service; this is
    the single place its reason is kept. Read-only in the admin; `detail` holds ids and counts,
    never text."""

    ACTIONS = [
        ("forget", "forget on the user's behalf"),
        ("retract", "retract"),
        ("normalise", "normalise statuses"),
        ("revoke-rule", "revoke rule"),
    ]

    staff = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    staff_username = models.CharField(max_length=150)
    subject = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+",
        help_text="The user the action was for (none for a product default).",
    )
    action = models.CharField(max_length=12, choices=ACTIONS)
    content_type = models.ForeignKey("contenttypes.ContentType", on_delete=models.PROTECT, related_name="+")
    object_id = models.CharField(max_length=64)
    reason = models.TextField()
    outcome = models.CharField(max_length=20, help_text="done, or why it was skipped.")
    detail = models.JSONField(default=dict, blank=True)
    acted_at = models.DateTimeField()

    class Meta:
        ordering = ["-acted_at", "-id"]
        permissions = [
            ("forget_memory", "Can forget a memory on the user's behalf"),
            ("retract_memory", "Can retract a memory slot"),
            ("normalise_memory", "Can normalise stored memory statuses"),
            ("revoke_rule", "Can revoke a boundary rule"),
            ("use_explain", "Can use the support explain view"),
        ]
        indexes = [
            models.Index(fields=["subject", "-acted_at"], name="support_action_subject"),
            models.Index(fields=["content_type", "object_id"], name="support_action_object"),
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.staff_username}"
