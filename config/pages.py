"""The few helpers every end-user page shares. It imports no view and no app: each app's
`urls.py` lists its own pages, and `config/urls.py` includes them.

Pages are plain Django views with forms that call the same services as the API
(DESIGN habit 3), POST-redirect-GET, and every one of them is private: `private_page` asks for
a login and sends `Cache-Control: no-store`, so a shared computer's back button or a proxy
never shows someone's memories.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from functools import wraps
from typing import ClassVar

from django import forms
from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LogoutView
from django.http import Http404
from django.shortcuts import resolve_url
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache

from config.errors import NotFound, ValidationError


def private_page(view: Callable) -> Callable:
    """Signed-in users only, and never cached: every page shows one person's private data.
    A domain `NotFound` (another user's object, an unknown id) becomes a plain 404 page."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.detail) from None

    return never_cache(login_required(wrapped))


# A flash message's extra tag naming the element it belongs beside (`at-m-<id>`): after an
# action the page shows it inside that element (a card, `tabindex="-1"`, focused by pages.js
# when the address ends in its anchor) instead of at the top, out of view.
ANCHOR_TAG = "at-"
MESSAGES_ANCHOR = "messages"


def notify(request, level: int, text: str, anchor: str = MESSAGES_ANCHOR) -> None:
    flash.add_message(request, level, text, extra_tags=f"{ANCHOR_TAG}{anchor}")


@dataclass(frozen=True)
class Notice:
    """What an action tells the user: a flash message's level and words, and the anchor of the
    element it belongs beside (where the action lands)."""

    level: int
    text: str
    anchor: str = MESSAGES_ANCHOR

    def add_to(self, request) -> None:
        notify(request, self.level, self.text, self.anchor)


def anchor_of(message) -> str | None:
    for tag in (message.extra_tags or "").split():
        if tag.startswith(ANCHOR_TAG):
            return tag[len(ANCHOR_TAG) :]
    return None


def messages_by_anchor(request) -> tuple[dict[str, list], list]:
    """This request's flash messages: those that belong beside an element (by anchor), and
    the rest."""
    placed: dict[str, list] = defaultdict(list)
    loose = []
    for message in flash.get_messages(request):
        anchor = anchor_of(message)
        if anchor and anchor != MESSAGES_ANCHOR:
            placed[anchor].append(message)
        else:
            loose.append(message)
    return placed, loose


class PagePresenter:
    """What a page shows, worked out beside its view (DESIGN habit 3), as a dataclass whose
    fields are its template's variables: `context()` gives every field but those in
    `not_shown` (what the view itself reads, or what only other variables are made from),
    with the variables `derived()` works out from the fields."""

    not_shown: ClassVar[tuple[str, ...]] = ()

    def derived(self) -> dict:
        return {}

    def context(self) -> dict:
        """The template's variables of this page."""
        shown = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in self.not_shown
        }
        return shown | self.derived()


def next_url(request, default: str = "memory:list") -> str:
    """Where to go after an action: the form's `next` when it is a path on this site
    (`/memories/?page=2#m-…`), else `default` (a URL name or path). Anything else — another
    host, a scheme, `//host`, a bare word that is neither — falls back to `default`: never an
    open redirect, never an error."""
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if (
        isinstance(candidate, str)
        and candidate.startswith("/")
        and not candidate.startswith(("//", "/\\"))
        and candidate.isprintable()  # no line breaks or other controls for a Location header
        and url_has_allowed_host_and_scheme(
            candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return candidate
    return resolve_url(default)


def form_errors_from(form, exc: ValidationError, *, fields: dict[str, str] | None = None) -> None:
    """Put a service's `ValidationError` on the form that caused it: its field errors on the
    matching form fields (`fields` maps service field names to form field names), the rest as
    errors of the whole form. The form then re-renders and nothing was stored."""
    fields = fields or {}
    if not exc.errors:
        form.add_error(None, exc.detail)
        return
    for name, messages in exc.errors.items():
        target = fields.get(name, name)
        target = target if target in form.fields else None
        for message in messages:
            form.add_error(target, message)


def day(moment: datetime | None) -> str:
    """A date, one format on every page: "3 Aug 2026", in the active time zone (the user's,
    see `memory.middleware`; templates use the same format, `j M Y`)."""
    if moment is None:
        return ""
    local = timezone.localtime(moment)
    return f"{local.day} {local:%b %Y}"


def when(moment: datetime | None) -> str:
    """A date and time: "3 Aug 2026, 14:05". Pages that show times name the zone once
    (`includes/time_zone.html`)."""
    if moment is None:
        return ""
    return f"{day(moment)}, {timezone.localtime(moment):%H:%M}"


class SignOutView(LogoutView):
    """Signing out says so on the sign-in page it lands on (the message outlives the session:
    it is kept in a cookie)."""

    def post(self, request, *args, **kwargs):
        was_signed_in = request.user.is_authenticated
        response = super().post(request, *args, **kwargs)
        if was_signed_in:
            flash.success(
                request, "You are signed out. Sign in again to see your companion's memories."
            )
        return response


class SignInForm(AuthenticationForm):
    """The sign-in form, refusing a username no account can have (longer than the username
    field allows, or with control characters) with the same message as a wrong password,
    before authentication: such a value is never looked up, counted by the sign-in lockout or
    stored with a failed attempt. (Django's own form shows the length limit in the page but
    does not validate it.)"""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password didn't match. Please try again.",
        "empty": "Enter your username and your password to sign in.",
    }

    def clean(self):
        # An empty field is one clear message for the whole form, not "required" beside it
        # as well as "didn't match" above it.
        missing = [name for name in ("username", "password") if name in self._errors]
        if missing:
            for name in missing:
                del self._errors[name]
            raise forms.ValidationError(self.error_messages["empty"], code="empty")
        username = self.data.get(self.add_prefix("username"), "")
        if not isinstance(username, str) or (
            len(username) > self.username_field.max_length or not username.isprintable()
        ):
            raise self.get_invalid_login_error()
        return super().clean()
