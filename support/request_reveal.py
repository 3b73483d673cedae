"""The reveal an admin request draws its pages under (SPEC §13 S1), looked up once per request.

Every admin page asks here — the masking base class (`support.admin.SupportAdmin`), the explain
and turn pages, the banner every admin page shows — so the open reveal is read once, and its
time is checked as the page is drawn: a reveal found past its time ends there and then
(`support.reveals.reveal_current`), and the page says so."""

from __future__ import annotations

from django.contrib import messages
from django.utils import timezone

from .reveals import Reveal, can_reveal, reveal_current

_UNSET = object()


def request_reveal(request) -> Reveal | None:
    """The open reveal of the staff member making `request`, or None."""
    if request is None:
        return None
    found = getattr(request, "_support_reveal", _UNSET)
    if found is _UNSET:
        state = reveal_current(staff=getattr(request, "user", None))
        if state.expired is not None:
            ended = timezone.localtime(state.expired.expires_at)
            messages.info(
                request,
                f"Your reveal of {state.expired.subject_ref}'s private text ended at "
                f"{ended:%H:%M:%S} ({ended.tzname()}): it is hidden again.",
                fail_silently=True,
            )
        found = state.open
        request._support_reveal = found
    return found


def request_reveal_forget(request) -> None:
    """Forget what `request_reveal` found (after this request opened or closed a reveal)."""
    if request is not None and hasattr(request, "_support_reveal"):
        del request._support_reveal


def request_subject(request) -> int | None:
    """The id of the user whose private text this request may show, or None."""
    reveal = request_reveal(request)
    return reveal.subject_id if reveal is not None else None


def request_may_reveal(request) -> bool:
    """May the staff member making `request` open a reveal (`view_private_text`)?"""
    if request is None:
        return False
    found = getattr(request, "_support_may_reveal", None)
    if found is None:
        found = can_reveal(getattr(request, "user", None))
        request._support_may_reveal = found
    return found
