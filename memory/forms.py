"""Forms of the memory pages. They check shape only; the services decide (SPEC §2, §4) and
their `ValidationError`s come back onto these forms (`config.pages.form_errors_from`)."""

from django import forms

from .domain import VALUE_MAX
from .presentation import CERTAINTY

SORTS = (("newest", "Newest first"), ("az", "A–Z"))
SEARCH_MAX = 200


class MemoryFilterForm(forms.Form):
    """Search, filter and sort the memories page. The form is posted (SPEC §12: a search term
    never goes into a URL): the term is kept in the session, and the rest — which character,
    which certainty, which order, none of them private — goes into the page's address, so a
    filtered view can be bookmarked."""

    q = forms.CharField(label="Search", required=False, max_length=SEARCH_MAX)
    character = forms.ChoiceField(label="Show", required=False)
    certainty = forms.ChoiceField(
        label="Certainty",
        required=False,
        choices=[("", "Any certainty"), *[(name, label) for name, (label, _) in CERTAINTY.items()]],
    )
    sort = forms.ChoiceField(label="Order", required=False, choices=SORTS)

    def __init__(self, *args, characters=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["character"].choices = [
            ("", "Everything"),
            ("everywhere", "Only what applies everywhere"),
            *[(c.slug, f"What {c.name} can use") for c in characters],
        ]


class CorrectForm(forms.Form):
    """SPEC §2 Correct: the new value. The value rule (1–2,000 characters, not blank) is the
    same as the service's, so the form catches it first; the service still checks."""

    value = forms.CharField(
        label="New value",
        max_length=VALUE_MAX,
        strip=True,
        error_messages={"required": "Write the correct value, or use “Forget” to remove it."},
    )


class ForgetForm(forms.Form):
    """F1/F2: how wide to forget. `whole_key` only matters for a key with several values."""

    everywhere = forms.BooleanField(
        label="Forget this everywhere: with every character and in every conversation, now and "
        "later",
        required=False,
    )
    whole_key = forms.BooleanField(label="Forget every value, not only this one", required=False)

    def __init__(self, *args, many: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if not many:
            del self.fields["whole_key"]


class MemorySwitchesForm(forms.Form):
    """I8: the two memory switches, as the memories page offers them. An unticked box is
    "off" (a browser does not send it); `switches` tells this form's posts from others."""

    switches = forms.CharField(widget=forms.HiddenInput, initial="1")
    learn = forms.BooleanField(
        label="Learn from my messages",
        required=False,
        help_text="When this is off, the companion notes nothing new from what you say. What it "
        "already remembers stays, and you can still confirm and correct it here.",
    )
    use = forms.BooleanField(
        label="Use memories in conversations",
        required=False,
        help_text="When this is off, the companion brings none of these memories into a "
        "conversation. Nothing is deleted: everything stays here as it is.",
    )
