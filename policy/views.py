"""The boundaries page (SPEC §6): for each character, what the companion may do now
(allow / deny / ask) and why, in words; controls to always allow, always ask or never, at a
chosen scope; revoking a choice; and the conflicts the static check finds.

What the page shows is read by `policy.boundaries_page`, which decides with the pure engine
over rules read in bulk and logs none of those decisions (D10), so showing the page writes
nothing; the actions call the services the API calls, POST-redirect-GET."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import Conflict, ValidationError
from config.pages import form_errors_from, messages_by_anchor, next_url, private_page

from .boundaries_page import BoundaryPost, CardAsked, boundaries_page
from .forms import EFFECT_CHOICES, BoundaryForm
from .presentation import capability_name
from .services.rules import boundary_set, rule_revoke

# A scope's errors stand beside the one field that chooses the place.
SCOPE_FIELDS = {"scope.kind": "where", "scope.character": "where", "scope.conversation": "where"}


def _page(request, *, error_form: BoundaryForm | None = None):
    """The page (`policy.boundaries_page`); after a refused form, with its errors and the card
    it was sent from as it was posted."""
    placed, loose = messages_by_anchor(request)
    refused = error_form is not None
    page = boundaries_page(
        request.user,
        asked=CardAsked.of(request.POST if refused else request.GET, refused=refused),
        placed=placed,
    )
    return render(
        request,
        "policy/boundaries.html",
        {
            **page.context(),
            "effects": EFFECT_CHOICES,
            "error_form": error_form,
            "loose_messages": loose + page.unplaced,
        },
    )


@private_page
def boundaries_view(request):
    return _page(request)


@private_page
@require_POST
def boundary_set_view(request):
    """Set always allow / always ask / never for a capability at a chosen place. Back on the
    page, the card it was sent from is in view and open, showing the place just chosen."""
    post = BoundaryPost.of(request.user, request.POST)
    form = post.form
    if form.is_valid():
        try:
            outcome = boundary_set(
                user=request.user,
                capability=form.cleaned_data["capability"],
                effect=form.cleaned_data["effect"],
                scope=form.scope(),
            )
        except ValidationError as exc:
            form_errors_from(form, exc, fields=SCOPE_FIELDS)
        except Conflict:
            messages.error(
                request,
                "That choice changed at the same moment somewhere else, so nothing was "
                "saved. Here is what applies now; please choose again.",
            )
            return redirect("policy:boundaries")
        else:
            post.saved(outcome).add_to(request)
            return redirect(post.landing())
    return _page(request, error_form=form)


@private_page
@require_POST
def rule_revoke_view(request, rule_id):
    """Revoke one of your choices (D5). Another user's rule or a product default is a 404."""
    rule = rule_revoke(rule_id=rule_id, owner=request.user)
    messages.success(
        request,
        f"Removed your choice for {capability_name(rule.capability_id)}. "
        "What applies now is shown below.",
    )
    return redirect(next_url(request, "policy:boundaries"))
