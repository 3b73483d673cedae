"""The support pages of the admin beyond the model admins.

- The explain view (`/admin/support/explain/`): for a user, character, conversation, scene and
  time, what the resolver and the policy engine say, with every reason in words; and, for a
  turn, the prompt plan it stored (`support.explain_page`, over `support.services`). From a
  turn, a message or a memory's source in the admin, one click
  (`/admin/support/explain/turn/<id>/`) opens it pre-filled with that turn's conversation,
  scene and plan time. Values, whole keys and labels
  show only inside a reveal of that user (S1), and such a page is logged once.
- Reveals (`/admin/support/reveal/`, SPEC §13 S1): open one for a user with a reason (from the
  user's admin page and from any masked value), extend it, close it (`support.reveals`)."""

from __future__ import annotations

from datetime import UTC

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_POST

from config.errors import NotFound
from config.errors import PermissionDenied as DomainPermissionDenied
from config.errors import ValidationError as DomainValidationError
from config.pages import next_url
from conversations.plan_snapshot import PlanSnapshot

from . import reveals, selectors
from . import services as support
from .display import EXPLAIN_ADMIN_OPTS, explain_url
from .explain_page import ExplainPage, explain_form_page
from .forms import ExplainForm, RevealForm
from .request_reveal import request_may_reveal, request_reveal, request_reveal_forget
from .reveal_page import RevealOpening, reveal_form_open, reveal_page

# Why a staff member may not open a support page: the admin's 403 page says it (config.views).
NO_EXPLAIN = (
    "Explaining a context needs the permission “Can use the support explain view”, "
    "which your account does not have. An administrator can give it to you."
)
NO_REVEAL = (
    "You do not have the permission to reveal a user's private text (“Can open a reveal "
    "of one user's private text”). An administrator can give it to you; until then "
    "values, messages and titles stay hidden for you."
)


def explain_turn_view(request, turn_id):
    """Explain pre-filled from a turn: its user, conversation, scene, the time its plan was made
    for (else when it was made), the capabilities the plan asked about, and the turn itself."""
    if not request.user.has_perm(support.EXPLAIN_PERMISSION):
        raise PermissionDenied(NO_EXPLAIN)
    turn = selectors.turn_with_user(turn_id)
    if turn is None:
        raise Http404("No such turn.")
    at = support.turn_plan_time(turn).astimezone(UTC).isoformat().replace("+00:00", "Z")
    return redirect(
        explain_url(
            user=turn.user.get_username(),
            conversation=str(turn.conversation_id),
            scene=turn.scene or "",
            now=at,
            turn=str(turn.pk),
            capabilities=(PlanSnapshot.of(turn.plan_snapshot) or PlanSnapshot()).capabilities,
        )
    )


def explain_view(request):
    """Pick a user, character, conversation, scene and time; see the resolver's result (counts,
    every record id with its step, reason and detail, the prompt projection) and the policy
    engine's per capability (effect, reason, rule ids, each rule's explain reason). Values,
    whole keys and labels only inside a reveal of that user, and then the page is logged once
    (`support.explain_page`). Writes nothing else (no decision-log rows)."""
    if not request.user.has_perm(support.EXPLAIN_PERMISSION):
        raise PermissionDenied(NO_EXPLAIN)
    form = ExplainForm.of_query(request.GET)
    page = ExplainPage()
    if form.is_bound and form.is_valid():
        page = explain_form_page(
            form,
            staff=request.user,
            reveal=request_reveal(request),
            may_reveal=request_may_reveal(request),
            back=request.get_full_path(),
        )
    return _support_page(
        request,
        "admin/support/explain.html",
        "Explain a context",
        form,
        **page.context(),
        **EXPLAIN_ADMIN_OPTS,
    )


def _support_page(request, template: str, title: str, form, **page):
    """A support page of the admin (`admin/support/support_page.html`): the admin's own
    context, the page's title and form, and what the page shows."""
    context = {
        **admin.site.each_context(request),
        "title": title,
        "subtitle": None,
        "form": form,
        "media": form.media,
        **page,
    }
    return TemplateResponse(request, template, context)


# ---------------------------------------------------------------------------------------------
# Reveals (S1)


def _time(moment) -> str:
    local = timezone.localtime(moment)
    return f"{local:%H:%M:%S} ({local.tzname()})"


def reveal_view(request):
    """Open a reveal of one user's private text: the form (GET, pre-filled from a masked value
    or the user's page) and its answer (POST). A reason that is missing or short, an unknown
    user or a second reveal of the same user is a form error and opens nothing; an open reveal
    of another user is closed by this one (the form says so)."""
    if not request_may_reveal(request):
        raise PermissionDenied(NO_REVEAL)
    current = request_reveal(request)
    form = RevealForm.of_request(request)
    opening = RevealOpening()
    if form.is_bound and form.is_valid():
        opening = reveal_form_open(form, staff=request.user)
    if opening.grant is None:
        return _support_page(
            request,
            "admin/support/reveal.html",
            "Reveal a user's private text",
            form,
            **reveal_page(current, opening),
        )
    request_reveal_forget(request)
    # No message: the reveal's banner, on the page this leads to, says whose text shows until
    # when and that every page is logged (once, not twice).
    return redirect(next_url(request, default=opening.landing))


@require_POST
def reveal_extend_view(request, grant_id):
    """Start the time of your open reveal again; back to the page you were on."""
    try:
        grant = _your_reveal(reveals.reveal_extend, request, grant_id)
    except DomainPermissionDenied:
        raise PermissionDenied(NO_REVEAL) from None
    except DomainValidationError as error:
        messages.error(request, error.detail)
    else:
        messages.success(
            request,
            f"Your reveal of {grant.subject.get_username()}'s private text "
            f"now ends at {_time(grant.expires_at)}.",
        )
    return redirect(next_url(request, default="admin:index"))


@require_POST
def reveal_close_view(request, grant_id):
    """Close your reveal now; back to the page you were on, masked again."""
    grant = _your_reveal(reveals.reveal_close, request, grant_id)
    ref = grant.subject.get_username() if grant.subject is not None else "the user"
    messages.success(request, f"Closed: {ref}'s private text is hidden again.")
    return redirect(next_url(request, default="admin:index"))


def _your_reveal(change, request, grant_id):
    """`change` (extend or close) done to the reveal `grant_id` of the staff member making
    `request`; one that is not theirs, or no reveal at all, is not found."""
    try:
        return change(staff=request.user, grant_id=grant_id)
    except NotFound:
        raise Http404("No such reveal of yours.") from None
