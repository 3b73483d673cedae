"""The support logs (DESIGN, Privacy; SPEC §13): the reveals support staff open to see one
user's private text (`RevealGrant`), the append-only access log of every reveal and every page
it showed (`PrivateTextAccess`), and every support action with the reason the staff member
gave (`SupportAction`). Written only by `support.services` and `support.reveals`; read-only in
the admin.

The logs kept the rows they had when they moved here from `config` (the tables were renamed
by `config.0004`, the content types and permissions re-labelled by `support.0001`)."""

import uuid

from django.conf import settings
from django.db import models


class AppendOnly(Exception):
    """A log row was about to be changed or deleted (S2: the access log is append-only)."""


class AppendOnlyQuerySet(models.QuerySet):
    def delete(self):
        raise AppendOnly("The access log is append-only: its rows are never deleted.")


def _user_reference(help_text: str = ""):
    """A user, referenced without a database constraint and without cascades: a log row
    outlives the account it names."""
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text=help_text,
    )


def _object_reference(*, optional: bool = False):
    """The object a log row is about: its content type (kept while rows name it, no reverse
    accessor) and its id as text (ids of every kind). `optional`: a row may name none."""
    return (
        models.ForeignKey(
            "contenttypes.ContentType",
            null=optional,
            blank=optional,
            on_delete=models.PROTECT,
            related_name="+",
        ),
        models.CharField(max_length=64, blank=optional),
    )


class RevealGrant(models.Model):
    """S1: a reveal — one staff member may see one end user's private text, for a written
    reason, from `opened_at` until `expires_at` (`SUPPORT_REVEAL_SECONDS` after it was opened or
    last extended) or until it is closed. Expiry needs no worker: the time is checked whenever a
    page is drawn (`support.reveals.reveal_current`), and a reveal found past its time is closed
    then, as at `expires_at`.

    At most one reveal per staff member is open at a time (a partial unique constraint), so every
    admin page shows at most one user's text. Rows are never deleted: deleting the user replaces
    `subject` by `subject_pseudonym` (S2), and the user's "Your data" page and export list them."""

    ENDS = [
        ("closed", "closed by the staff member"),
        ("expired", "expired"),
        ("replaced", "closed by a reveal of another user"),
        ("deleted", "closed because the user was deleted"),
    ]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    staff = _user_reference()
    staff_username = models.CharField(max_length=150)
    subject = _user_reference("The user whose private text the reveal shows.")
    subject_pseudonym = models.CharField(
        max_length=40, blank=True, help_text="Set when the user was deleted: a one-way pseudonym."
    )
    reason = models.TextField()
    opened_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    ended = models.CharField(max_length=10, choices=ENDS, blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        verbose_name = "reveal"
        constraints = [
            models.UniqueConstraint(
                fields=["staff"],
                condition=models.Q(closed_at__isnull=True),
                name="reveal_one_open_per_staff",
            ),
        ]
        indexes = [
            models.Index(fields=["subject", "-opened_at"], name="reveal_subject_time"),
        ]

    def __str__(self) -> str:
        return f"reveal {self.pk} by {self.staff_username}"


class PrivateTextAccess(models.Model):
    """The access log (S1, S2): append-only. One row when a reveal is opened, extended, closed
    or found expired, and one row for each admin page that showed private text under it — who,
    for which user, under which reveal (and so for which reason), which kind of page, which
    object for a change page, how many objects' text it showed, and when. Written only by
    `support.reveals`; read-only in the admin, and only for staff with `view_privatetextaccess`
    (the Support group does not have it).

    Rows from before reveals existed have no grant: one row per object shown.

    The users are referenced without a database constraint and without cascades: a log row
    outlives the staff account and the end user (deleting the user replaces `subject` by
    `subject_pseudonym`, the one change a row ever sees)."""

    EVENTS = [
        ("opened", "reveal opened"),
        ("extended", "reveal extended"),
        ("closed", "reveal closed"),
        ("expired", "reveal expired"),
        ("page", "page showed private text"),
    ]
    VIEWS = [
        ("changelist", "changelist"),
        ("change", "change page"),
        ("explain", "explain view"),
        ("action", "action confirmation"),
    ]

    grant = models.ForeignKey(
        RevealGrant,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="events",
    )
    event = models.CharField(max_length=10, choices=EVENTS, default="page")
    staff = _user_reference()
    staff_username = models.CharField(max_length=150)
    subject = _user_reference("The user whose text was shown.")
    subject_pseudonym = models.CharField(max_length=40, blank=True)
    content_type, object_id = _object_reference(optional=True)
    view = models.CharField(max_length=12, choices=VIEWS, blank=True)
    shown = models.PositiveIntegerField(
        default=1, help_text="How many objects' private text the page showed."
    )
    accessed_at = models.DateTimeField()

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-accessed_at", "-id"]
        verbose_name = "private text access"
        verbose_name_plural = "private text access log"
        permissions = [
            (
                "view_private_text",
                "Can open a reveal of one user's private text (S1); every page it shows is logged",
            ),
        ]
        indexes = [
            models.Index(fields=["content_type", "object_id"], name="reveal_object"),
            models.Index(fields=["staff", "-accessed_at"], name="reveal_staff_time"),
            models.Index(fields=["subject", "-accessed_at"], name="access_subject_time"),
        ]

    def __str__(self) -> str:
        return f"{self.staff_username}: {self.event} at {self.accessed_at:%Y-%m-%d %H:%M:%S}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise AppendOnly("The access log is append-only: a row is never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("The access log is append-only: its rows are never deleted.")


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

    staff = _user_reference()
    staff_username = models.CharField(max_length=150)
    subject = _user_reference("The user the action was for (none for a product default).")
    action = models.CharField(max_length=12, choices=ACTIONS)
    content_type, object_id = _object_reference()
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
