"""What a user may know about support's access to their private text (SPEC §13 S2): every
reveal of it, newest first — when, for how long, the reason as written, and by "a support team
member", never the staff member's name. Read by the "Your data" page and the export."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from config.clock import db_now, iso_z
from conversations.models import Conversation, Turn

from .models import RevealGrant

BY = "a support team member"


@dataclass(frozen=True)
class RevealSeen:
    """One reveal of the user's private text, as the user sees it."""

    opened_at: datetime
    expires_at: datetime
    ended_at: datetime | None  # None while it is open
    status: str  # "open", "closed" or "expired"
    reason: str
    by: str = BY

    @property
    def seconds(self) -> int | None:
        """How long it lasted (None while it is open)."""
        if self.ended_at is None:
            return None
        return max(0, int((self.ended_at - self.opened_at).total_seconds()))

    @property
    def length_words(self) -> str:
        """ "for 15 minutes", "for 1 minute", "for less than a minute"; "" while open."""
        seconds = self.seconds
        if seconds is None:
            return ""
        minutes = round(seconds / 60)
        if minutes < 1:
            return "for less than a minute"
        return f"for {minutes} minute{'s' if minutes != 1 else ''}"


def _seen(grant: RevealGrant, now: datetime | None) -> RevealSeen:
    if grant.closed_at is not None:
        status = "expired" if grant.ended == "expired" else "closed"
        ended = grant.closed_at
    elif now is not None and grant.expires_at <= now:
        status, ended = "expired", grant.expires_at
    else:
        status, ended = "open", None
    return RevealSeen(
        opened_at=grant.opened_at,
        expires_at=grant.expires_at,
        ended_at=ended,
        status=status,
        reason=grant.reason,
    )


def reveals_of(user) -> list[RevealSeen]:
    """Every reveal of `user`'s private text, newest first: one query (and the clock when one
    has not been closed yet). A reveal past its time reads as expired even before a page of
    its staff member has noticed."""
    grants = list(
        RevealGrant.objects.filter(subject_id=user.pk)
        .order_by("-opened_at", "-id")
        .only("opened_at", "expires_at", "closed_at", "ended", "reason")
    )
    now = db_now() if any(g.closed_at is None for g in grants) else None
    return [_seen(grant, now) for grant in grants]


def reveals_export(user) -> list[dict]:
    """The export file's `reveals` (SPEC §9, S2): read-only — an import ignores it."""
    return [
        {
            "opened_at": iso_z(r.opened_at),
            "expires_at": iso_z(r.expires_at),
            "ended_at": iso_z(r.ended_at),
            "status": r.status,
            "reason": r.reason,
            "by": r.by,
        }
        for r in reveals_of(user)
    ]


# ---------------------------------------------------------------------------------------------
# The explain pages' reads


def turn_with_user(turn_id) -> Turn | None:
    """A turn by id, with its user (explain from a turn); None when there is none."""
    return Turn.objects.select_related("user").filter(pk=turn_id).first()


def turn_of_user(user, turn_id) -> Turn | None:
    """One of `user`'s turns by id; None when the id names no turn of theirs."""
    return Turn.objects.filter(pk=turn_id, user=user).first()


def conversation_choices(user, limit: int = 50) -> list[tuple]:
    """`user`'s newest conversations as (id, character slug, created) to pick from: ids, never
    titles — a title is the user's own text."""
    return list(
        Conversation.objects.filter(user=user)
        .select_related("character")
        .order_by("-created_at")
        .values_list("pk", "character__slug", "created_at")[:limit]
    )
