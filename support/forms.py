"""The forms of the support admin: the reason every support action asks for, the forget
options, the explain view's context picker, and the reveal of one user's private text."""

from __future__ import annotations

from django import forms

from config.errors import ValidationError as DomainValidationError
from conversations.models import Character
from policy.domain import REQUESTERS
from policy.models import Capability

from . import reveals
from . import services as support


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=support.REASON_MAX,
        help_text="Required. A ticket number and what the user asked for; it is logged with your "
        "name. Do not paste the user's private text here.",
    )

    def clean_reason(self):
        try:
            return support.clean_reason(self.cleaned_data.get("reason"))
        except DomainValidationError as error:
            raise forms.ValidationError(error.detail) from None


class ForgetForm(ReasonForm):
    everywhere = forms.BooleanField(
        required=False,
        label="Forget everywhere",
        help_text="Forget the key in every scope of the user, present and future (tombstone scope "
        "*).",
    )
    whole_key = forms.BooleanField(
        required=False,
        label="Every value of the key",
        help_text="For a multi-valued key: forget every value, not only this one.",
    )


class PreciseDateTimeInput(forms.DateTimeInput):
    """A date and time shown to the microsecond (Django's input drops them from an initial
    value)."""

    supports_microseconds = True


class ExplainForm(forms.Form):
    user = forms.CharField(max_length=150, label="User", help_text="The user ref (username).")
    character = forms.ChoiceField(required=False)
    conversation = forms.UUIDField(required=False, help_text="A conversation id of this user.")
    scene = forms.CharField(required=False, max_length=100)
    now = forms.DateTimeField(
        # Shown back with its microseconds: a time resubmitted from the page is the same instant,
        # never one just before the record it explains (which would then read "not valid yet").
        widget=PreciseDateTimeInput(format="%Y-%m-%d %H:%M:%S.%f"),
        required=False,
        label="Time",
        help_text="Valid time, UTC (2026-08-05T12:00:00Z). Empty: now, by the database clock.",
    )
    keys = forms.CharField(
        required=False, help_text="Only these keys (comma-separated). Empty: every key."
    )
    memory = forms.UUIDField(
        required=False, help_text="Only the key of this memory record of the user (its id)."
    )
    turn = forms.UUIDField(
        required=False, help_text="A turn of this user: its stored prompt plan is shown too."
    )
    capabilities = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Empty: every capability.",
    )
    requested_by = forms.ChoiceField(initial="assistant")

    @classmethod
    def of_query(cls, query) -> ExplainForm:
        """The form of the page's query string: unbound until it names a user; a link may name
        only the user, and the rest has defaults."""
        if "user" not in query:
            return cls(None)
        data = query.copy()
        data.setdefault("requested_by", "assistant")
        return cls(data)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["character"].choices = [("", "(the conversation's, or none)")] + [
            (slug, f"{slug} — {name}")
            for slug, name in Character.objects.values_list("slug", "name")
        ]
        self.fields["capabilities"].choices = [
            (n, n) for n in Capability.objects.values_list("name", flat=True)
        ]
        self.fields["requested_by"].choices = [(r, r) for r in REQUESTERS]

    def clean_keys(self):
        return [k.strip() for k in (self.cleaned_data.get("keys") or "").split(",") if k.strip()]


class RevealForm(forms.Form):
    """S1: open a reveal of one user's private text. The service checks the user and the reason
    (10–500 characters) and says what is wrong; this form only carries them."""

    user = forms.CharField(
        required=False,
        max_length=150,
        label="User",
        widget=forms.TextInput(attrs={"size": 40}),
        help_text="The user's username. Only this user's private text shows; everyone else's "
        "stays hidden.",
    )
    reason = forms.CharField(
        required=False,
        label="Reason",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60, "maxlength": reveals.REASON_MAX}),
        help_text=f"Required, {reveals.REASON_MIN}–{reveals.REASON_MAX} characters: a ticket "
        "number "
        "and what the user asked for. The user sees it, as you write it, on their “Your "
        "data” page (not your name). Do not paste the user's private text here.",
    )
    next = forms.CharField(required=False, widget=forms.HiddenInput)

    @classmethod
    def of_request(cls, request) -> RevealForm:
        """The form's answer (POST), or the form pre-filled from the query string (from a
        masked value or the user's page: the user and the page to return to)."""
        if request.method == "POST":
            return cls(request.POST)
        query = request.GET
        return cls(initial={"user": query.get("user", ""), "next": query.get("next", "")})
