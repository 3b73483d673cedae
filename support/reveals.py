"""Reveals (SPEC §13 S1, S2): the only way support staff see a user's private text — memory
values, message content, conversation titles and a key's free part (the `priya` of
`people.priya.works_at`).

- **A reveal is a grant** for one staff member and one end user, opened with a written reason
  (10–500 characters), lasting `SUPPORT_REVEAL_SECONDS` (15 minutes) unless closed sooner.
  Only staff with `support.view_private_text` can open one. A staff member has at most one
  open reveal: opening one for another user closes the first (`replaced`); a second for the
  same user is refused (`RevealAlreadyOpen`) — extend that one instead.
- **Time is checked when a page is drawn** (`reveal_current`), so no worker is needed: a
  reveal found past its time is closed then, as at its `expires_at`, and the expiry logged.
- **Everything is logged, append-only** (`PrivateTextAccess`): opened, extended, closed,
  expired, and one row per page that showed private text under the reveal
  (`reveal_page_log`), never one per value.
- **Deleting a user keeps the rows** (`reveals_forget_user`): the user is replaced by a one-way
  pseudonym, in the reasons too, so no username remains.

Every writer here is a service: keyword-only arguments, one transaction, the staff member's
reveals serialised by a lock on their account row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.utils.crypto import salted_hmac

from config.clock import db_now
from config.errors import NotFound, PermissionDenied, ValidationError

from .models import PrivateTextAccess, RevealGrant

PRIVATE_TEXT_PERMISSION = "support.view_private_text"
REASON_MIN = 10
REASON_MAX = 500
PSEUDONYM_SALT = "support.reveals.subject"


def reveal_duration() -> timedelta:
    """How long a reveal lasts from its opening or its last extension (a setting)."""
    return timedelta(seconds=settings.SUPPORT_REVEAL_SECONDS)


def duration_words(delta: timedelta | None = None) -> str:
    """How long a reveal lasts, in words: "15 minutes", "1 minute", "20 seconds"."""
    seconds = int((delta or reveal_duration()).total_seconds())
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = round(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def can_reveal(staff) -> bool:
    """May `staff` open a reveal? Active staff with `view_private_text` only (a superuser has
    every permission, and still sees nothing without an open reveal)."""
    return bool(
        staff and staff.is_active and staff.is_staff and staff.has_perm(PRIVATE_TEXT_PERMISSION)
    )


@dataclass(frozen=True)
class Reveal:
    """An open reveal, as the admin pages use it: whose text shows, for whom, until when."""

    id: object
    staff_id: int
    subject_id: int
    subject_ref: str  # the user's username
    reason: str
    opened_at: datetime
    expires_at: datetime

    @classmethod
    def of(cls, grant: RevealGrant) -> Reveal:
        ref = grant.subject.get_username() if grant.subject is not None else grant.subject_pseudonym
        return cls(
            grant.pk,
            grant.staff_id,
            grant.subject_id,
            ref,
            grant.reason,
            grant.opened_at,
            grant.expires_at,
        )


@dataclass(frozen=True)
class RevealState:
    """What `reveal_current` found: the open reveal, if any, and a reveal that this very look
    found past its time (closed now, as expired), if any."""

    open: Reveal | None = None
    expired: Reveal | None = None


class RevealAlreadyOpen(ValidationError):
    """S1: a second open reveal for the same staff member and user. `grant` is the open one."""

    code = "reveal_already_open"

    def __init__(self, grant: RevealGrant):
        ref = grant.subject.get_username() if grant.subject is not None else "this user"
        super().__init__(
            f"You already have a reveal of {ref}'s private text open. Extend it instead "
            "of opening another."
        )
        self.grant = grant


def clean_reveal_reason(reason) -> str:
    """The reason as written (trimmed): 10–500 characters, e.g. a ticket and what the user
    asked for."""
    text = reason.strip() if isinstance(reason, str) else ""
    if not text:
        raise ValidationError(
            "Say why you need to see this user's private text (a ticket number and what "
            "the user asked for).",
            field="reason",
        )
    if len(text) < REASON_MIN:
        raise ValidationError(
            f"At least {REASON_MIN} characters: a ticket number and what the user asked for.",
            field="reason",
        )
    if len(text) > REASON_MAX:
        raise ValidationError(f"At most {REASON_MAX} characters.", field="reason")
    return text


# ---------------------------------------------------------------------------------------------
# The log


def _access_row(
    reveal: RevealGrant | Reveal,
    *,
    staff_id,
    staff_username: str,
    event: str,
    at: datetime,
    subject_pseudonym: str = "",
    view: str = "",
    model=None,
    object_id="",
    shown: int = 0,
) -> PrivateTextAccess:
    """S2: the one way a row of the support access log is written: an event of `reveal` (its
    row, or the open `Reveal` a page was drawn under), about the reveal's user."""
    return PrivateTextAccess.objects.create(
        grant_id=reveal.id,
        event=event,
        staff_id=staff_id,
        staff_username=staff_username,
        subject_id=reveal.subject_id,
        subject_pseudonym=subject_pseudonym,
        view=view,
        content_type=ContentType.objects.get_for_model(model, for_concrete_model=False)
        if model
        else None,
        object_id=str(object_id or ""),
        shown=shown,
        accessed_at=at,
    )


def _log(grant: RevealGrant, *, event: str, at: datetime) -> PrivateTextAccess:
    """An event of the reveal itself (opened, extended, closed, expired)."""
    return _access_row(
        grant,
        staff_id=grant.staff_id,
        staff_username=grant.staff_username,
        subject_pseudonym=grant.subject_pseudonym,
        event=event,
        at=at,
    )


def _end(grant: RevealGrant, *, how: str, at: datetime) -> None:
    """Close `grant` (`how`: closed, expired, replaced, deleted) and log it: an expiry as
    `expired`, every other end as `closed`."""
    grant.closed_at, grant.ended = at, how
    grant.save(update_fields=["closed_at", "ended"])
    _log(grant, event="expired" if how == "expired" else "closed", at=at)


def _lock_staff(staff) -> None:
    """Serialise one staff member's reveal changes (the row lock; SQLite locks the database)."""
    get_user_model().objects.select_for_update().filter(pk=staff.pk).values_list(
        "pk", flat=True
    ).first()


def _open_of(staff) -> RevealGrant | None:
    return (
        RevealGrant.objects.select_related("subject")
        .filter(staff_id=staff.pk, closed_at__isnull=True)
        .first()
    )


# ---------------------------------------------------------------------------------------------
# Services


def reveal_open(*, staff, user: str, reason: str) -> RevealGrant:
    """S1: open a reveal of `user`'s private text for `staff`, with `reason`. Refuses staff
    without the permission (`PermissionDenied`), a missing, short or long reason or an unknown
    user (`ValidationError` naming the field), and a second open reveal of the same user
    (`RevealAlreadyOpen`); nothing is opened then. An open reveal of another user is closed
    (`replaced`) in the same transaction."""
    if not can_reveal(staff):
        raise PermissionDenied("Opening a reveal needs the view_private_text permission.")
    reason = clean_reveal_reason(reason)
    ref = user.strip() if isinstance(user, str) else ""
    subject = get_user_model().objects.filter(username=ref).first() if ref else None
    if subject is None:
        raise ValidationError(
            f"No user is called “{ref}”." if ref else "Name the user (their username).",
            field="user",
        )
    try:
        with transaction.atomic():
            _lock_staff(staff)
            now = db_now()
            current = _open_of(staff)
            if current is not None and current.expires_at <= now:
                _end(current, how="expired", at=current.expires_at)
                current = None
            if current is not None and current.subject_id == subject.pk:
                raise RevealAlreadyOpen(current)
            if current is not None:
                _end(current, how="replaced", at=now)
            grant = RevealGrant.objects.create(
                staff_id=staff.pk,
                staff_username=staff.get_username(),
                subject=subject,
                reason=reason,
                opened_at=now,
                expires_at=now + reveal_duration(),
            )
            _log(grant, event="opened", at=now)
    except IntegrityError:
        # Another request of the same staff member opened one at the same moment.
        current = _open_of(staff)
        if current is None:
            raise
        raise RevealAlreadyOpen(current) from None
    return grant


def _own_open(staff, grant_id) -> tuple[RevealGrant, datetime]:
    grant = (
        RevealGrant.objects.select_related("subject").filter(pk=grant_id, staff_id=staff.pk).first()
    )
    if grant is None:
        raise NotFound("No such reveal of yours.")
    return grant, db_now()


def reveal_extend(*, staff, grant_id) -> RevealGrant:
    """S1: start the time of `staff`'s open reveal again (another `SUPPORT_REVEAL_SECONDS` from
    now), logged as `extended`. A reveal that has ended cannot be extended: open a new one."""
    if not can_reveal(staff):
        raise PermissionDenied("Extending a reveal needs the view_private_text permission.")
    with transaction.atomic():
        _lock_staff(staff)
        grant, now = _own_open(staff, grant_id)
        if grant.closed_at is None and grant.expires_at <= now:
            _end(grant, how="expired", at=grant.expires_at)
        if grant.closed_at is not None:
            raise ValidationError(
                "This reveal has ended; open a new one, with a reason.", field="reveal"
            )
        grant.expires_at = now + reveal_duration()
        grant.save(update_fields=["expires_at"])
        _log(grant, event="extended", at=now)
    return grant


def reveal_close(*, staff, grant_id) -> RevealGrant:
    """S1: close `staff`'s reveal now (logged as `closed`). Closing one that has ended already
    changes nothing (a second click)."""
    with transaction.atomic():
        _lock_staff(staff)
        grant, now = _own_open(staff, grant_id)
        if grant.closed_at is None:
            if grant.expires_at <= now:
                _end(grant, how="expired", at=grant.expires_at)
            else:
                _end(grant, how="closed", at=now)
    return grant


def reveal_current(*, staff) -> RevealState:
    """The reveal `staff` has open now, checked as a page is drawn: one query, and the clock
    only when there is one. A reveal past its time is closed here, as expired at its
    `expires_at`, and logged once (a concurrent request that found it too logs nothing). Staff
    who lost the permission see no reveal."""
    if staff is None or not getattr(staff, "is_authenticated", False) or not staff.is_staff:
        return RevealState()
    grant = _open_of(staff)
    if grant is None:
        return RevealState()
    if grant.expires_at > db_now():
        return RevealState(open=Reveal.of(grant) if can_reveal(staff) else None)
    with transaction.atomic():
        ended = RevealGrant.objects.filter(pk=grant.pk, closed_at__isnull=True).update(
            closed_at=grant.expires_at, ended="expired"
        )
        if ended:
            grant.closed_at, grant.ended = grant.expires_at, "expired"
            _log(grant, event="expired", at=grant.expires_at)
    return RevealState(expired=Reveal.of(grant) if ended else None)


def reveal_page_log(
    *, reveal: Reveal, staff, view: str, model=None, object_id="", shown: int
) -> None:
    """S1: one row for a page that showed `shown` objects' private text under `reveal` (never
    one per value): the kind of page, its model and, for a change page, its object."""
    if shown <= 0:
        return
    _access_row(
        reveal,
        staff_id=staff.pk,
        staff_username=staff.get_username(),
        event="page",
        at=db_now(),
        view=view,
        model=model,
        object_id=object_id,
        shown=shown,
    )


def pseudonym(user) -> str:
    """A one-way pseudonym for a deleted user: a keyed hash (the deployment's secret) of the
    account's id and username. The same account always gets the same one, so its rows stay
    together; nothing leads back to the username without the secret and a guess."""
    digest = salted_hmac(
        PSEUDONYM_SALT, f"{user.pk}:{user.get_username()}", algorithm="sha256"
    ).hexdigest()
    return f"deleted-user-{digest[:20]}"


def _scrub(text: str, username: str, replacement: str) -> str:
    """`text` with every whole-word mention of `username` (any case) replaced."""
    if not username:
        return text
    pattern = re.compile(rf"(?<![\w@.+-]){re.escape(username)}(?![\w@+-]|\.\w)", re.IGNORECASE)
    return pattern.sub(replacement, text)


def reveals_forget_user(*, user) -> int:
    """S2, on deleting `user`: their reveals and access-log rows stay, with the user replaced
    by `pseudonym(user)` — in the reasons too, so no username remains. An open reveal of them
    is closed (`deleted`). Runs inside the deletion's transaction; returns the reveals kept."""
    alias = pseudonym(user)
    username = user.get_username()
    with transaction.atomic():
        now = None
        grants = list(RevealGrant.objects.select_for_update().filter(subject_id=user.pk))
        for grant in grants:
            if grant.closed_at is None:
                now = now or db_now()
                if grant.expires_at <= now:
                    _end(grant, how="expired", at=grant.expires_at)
                else:
                    _end(grant, how="deleted", at=now)
            grant.subject, grant.subject_pseudonym = None, alias
            grant.reason = _scrub(grant.reason, username, alias)
            grant.save(update_fields=["subject", "subject_pseudonym", "reason"])
        PrivateTextAccess.objects.filter(subject_id=user.pk).update(
            subject=None, subject_pseudonym=alias
        )
    return len(grants)
