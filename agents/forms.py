"""The "Connected assistants" page's form (SPEC §15 M1). It checks shape only; the service
decides and its `ValidationError`s come back onto the form."""

from django import forms

from .models import ACCESS_LEVELS, EXPIRY_DAYS
from .services import NAME_MAX

ACCESS_WORDS = {
    "read": "Read: it can look up what the companion remembers about you",
    "write": "Read and write: it can also tell the companion new things about you",
    "forget": "Read, write and forget: it can also make the companion forget things",
}


class ConnectionForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=NAME_MAX,
        help_text="So you can recognise it later, e.g. “Laptop assistant”.",
    )
    access = forms.ChoiceField(
        label="What it may do",
        choices=[(value, ACCESS_WORDS[value]) for value, _ in ACCESS_LEVELS],
        initial="read",
        widget=forms.RadioSelect,
    )
    everyone = forms.ChoiceField(
        label="Which characters",
        choices=[("all", "All characters"), ("chosen", "Only the characters I choose")],
        initial="all",
        widget=forms.RadioSelect,
    )
    characters = forms.MultipleChoiceField(
        label="Characters", required=False, widget=forms.CheckboxSelectMultiple
    )
    expiry = forms.TypedChoiceField(
        label="Expires after",
        choices=[(days, f"{days} days") for days in EXPIRY_DAYS],
        coerce=int,
        initial=90,
    )

    def __init__(self, *args, characters=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["characters"].choices = [(c.slug, c.name) for c in characters]

    def clean(self):
        data = super().clean()
        if data.get("everyone") == "chosen" and not data.get("characters"):
            self.add_error("characters", "Choose at least one character.")
        return data
