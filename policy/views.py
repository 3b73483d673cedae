"""The boundaries page (SPEC §6): for each character, what the companion may do now
(allow / deny / ask) and why, in words; controls to always allow, always ask or never, at a
chosen scope; revoking a choice; and the conflicts the static check finds.

What the page shows is read by `policy.boundaries_page`, which decides with the pure engine
over rules read in bulk and logs none of those decisions (D10), so showing the page writes
nothing; the actions call the services the API calls, POST-redirect-GET."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from config.errors import Conflict, ValidationError
from config.pages import form_errors_from, messages_by_anchor, next_url, notify, private_page

from .boundaries_page import EFFECT_WORDS, CardAsked, boundaries_page, field_id
from .forms import EFFECT_CHOICES, BoundaryForm
from .presentation import capability_name
from .selectors import boundary_places, capability_list, rule_list
from .services.rules import boundary_set, rule_revoke


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
    user = request.user
    places = boundary_places(user, list(rule_list(user=user)))
    all_places = places.choices()
    sections = {"everywhere", *(c.slug for c in places.characters)}
    section = request.POST.get("section", "")
    section = section if section in sections else ""
    capability = request.POST.get("capability", "")
    form = BoundaryForm(
        request.POST,
        capabilities=[(c.name, capability_name(c.name)) for c in capability_list()],
        places=all_places,
        auto_id=f"%s-{field_id(section, capability)}" if section else "id_%s",
    )
    if form.is_valid():
        try:
            outcome = boundary_set(
                user=user,
                capability=form.cleaned_data["capability"],
                effect=form.cleaned_data["effect"],
                scope=form.scope(),
            )
        except ValidationError as exc:
            form_errors_from(
                form,
                exc,
                fields={
                    "scope.kind": "where",
                    "scope.character": "where",
                    "scope.conversation": "where",
                },
            )
        except Conflict:
            messages.error(
                request,
                "That choice changed at the same moment somewhere else, so nothing was "
                "saved. Here is what applies now; please choose again.",
            )
            return redirect("policy:boundaries")
        else:
            what = capability_name(form.cleaned_data["capability"])
            where = dict(all_places)[form.cleaned_data["where"]]
            choice = EFFECT_WORDS[form.cleaned_data["effect"]].lower()
            anchor = (
                f"card-{field_id(section, form.cleaned_data['capability'])}"
                if section
                else "messages"
            )
            if outcome == "unchanged":
                notify(
                    request, messages.INFO, f"{what} was already set to “{choice}” {where}.", anchor
                )
            else:
                notify(request, messages.SUCCESS, f"Saved: {what} — {choice}, {where}.", anchor)
            url = reverse("policy:boundaries")
            if section:
                query = urlencode(
                    {
                        "section": section,
                        "capability": form.cleaned_data["capability"],
                        "where": form.cleaned_data["where"],
                    }
                )
                url += f"?{query}#card-{field_id(section, form.cleaned_data['capability'])}"
            return redirect(url)
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
