"""The end user's pages (issue 5): their URLconf and the few helpers every page shares.

Pages are plain Django views with forms that call the same services as the API
(DESIGN habit 3), POST-redirect-GET, and every one of them is private: `private_page` asks for
a login and sends `Cache-Control: no-store`, so a shared computer's back button or a proxy
never shows someone's memories.

The view modules import the helpers below, and the URL patterns import the view modules. The
patterns are therefore built on first use (PEP 562 `__getattr__`), which keeps that import
cycle harmless whichever side is imported first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import wraps

from django.contrib.auth.decorators import login_required
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


def next_url(request, default: str = "memory:list") -> str:
    """Where to go after an action: the form's `next` when it is a path on this site, else
    `default` (a URL name or path). Never an open redirect."""
    candidate = request.POST.get("next") or request.GET.get("next")
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
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
    """A date as people say it: "3 Aug", with the year when it is not this year."""
    if moment is None:
        return ""
    local = timezone.localtime(moment)
    if local.year == timezone.localtime().year:
        return f"{local.day} {local:%b}"
    return f"{local.day} {local:%b %Y}"


def when(moment: datetime | None) -> str:
    """A date and time: "3 Aug, 14:05"."""
    if moment is None:
        return ""
    return f"{day(moment)}, {timezone.localtime(moment):%H:%M}"


def _build_urlpatterns() -> list:
    from django.urls import include, path

    from conversations import views as conversation_views
    from memory import views as memory_views
    from policy import views as policy_views

    memory = [
        path("", memory_views.memory_list, name="list"),
        path("forgotten/", memory_views.forgotten_list, name="forgotten"),
        path("forgotten/<uuid:tombstone_id>/learn-again", memory_views.tombstone_delete, name="learn-again"),
        path("<uuid:memory_id>/confirm", memory_views.memory_confirm, name="confirm"),
        path("<uuid:memory_id>/correct", memory_views.memory_correct, name="correct"),
        path("<uuid:memory_id>/retract", memory_views.memory_retract, name="retract"),
        path("<uuid:memory_id>/forget", memory_views.memory_forget, name="forget"),
        path("<uuid:memory_id>/history", memory_views.memory_history, name="history"),
    ]
    policy = [
        path("", policy_views.boundaries, name="boundaries"),
        path("set", policy_views.boundary_set_view, name="set"),
        path("rules/<uuid:rule_id>/revoke", policy_views.rule_revoke_view, name="revoke"),
    ]
    conversations = [
        path("", conversation_views.conversation_list, name="list"),
        path("<uuid:conversation_id>/", conversation_views.conversation_detail, name="detail"),
        path("<uuid:conversation_id>/delete", conversation_views.conversation_delete_view, name="delete"),
    ]
    data = [
        path("", conversation_views.data_index, name="index"),
        path("export.json", conversation_views.data_export, name="export"),
        path("forget-everything", conversation_views.forget_everything, name="forget-everything"),
        path("delete-account", conversation_views.delete_account, name="delete-account"),
    ]
    return [
        path("memories/", include((memory, "memory"))),
        path("boundaries/", include((policy, "policy"))),
        path("conversations/", include((conversations, "conversations"))),
        path("data/", include((data, "data"))),
    ]


def __getattr__(name: str):
    if name == "urlpatterns":
        patterns = _build_urlpatterns()
        globals()["urlpatterns"] = patterns
        return patterns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
