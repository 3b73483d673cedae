"""The reveal page's work (`/admin/support/reveal/`, SPEC §13 S1): the reveal its form asks for
opened (`support.reveals.reveal_open`), or why not, put on the form; and what the page shows
around the form. The view (`support.views.reveal_view`) validates the form, calls
`reveal_form_open` and renders the page or follows the reveal it opened."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from config.errors import ValidationError
from config.pages import form_errors_from

from . import reveals
from .models import RevealGrant
from .reveals import Reveal


@dataclass(frozen=True)
class RevealOpening:
    """What the reveal form's answer did: the reveal it opened, or none (the form says why) and,
    when the staff member already has one of that user open, that one, to extend instead."""

    grant: RevealGrant | None = None
    already: RevealGrant | None = None

    @property
    def landing(self) -> str:
        """Where an opened reveal leads when the form names no page: the user's memories."""
        ref = self.grant.subject.get_username()
        return reverse("admin:memory_memoryrecord_changelist") + "?q=" + ref


def reveal_form_open(form, *, staff) -> RevealOpening:
    """Open the reveal the valid reveal form asks for. A reason missing or short, an unknown
    user or a second reveal of the same user opens nothing and is an error on the form; an
    open reveal of another user is closed by this one (`reveals.reveal_open`)."""
    try:
        grant = reveals.reveal_open(
            staff=staff, user=form.cleaned_data["user"], reason=form.cleaned_data["reason"]
        )
    except reveals.RevealAlreadyOpen as error:
        form.add_error(None, error.detail)
        return RevealOpening(already=error.grant)
    except ValidationError as error:
        form_errors_from(form, error)
        return RevealOpening()
    return RevealOpening(grant=grant)


def reveal_page(current: Reveal | None, opening: RevealOpening) -> dict:
    """What the page shows around the form: the staff member's open reveal (`current`), the
    one of the same user the form could not open again, and how long a reveal lasts."""
    return {
        "current": current,
        "already": opening.already,
        "duration": reveals.duration_words(),
    }
