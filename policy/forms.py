"""Forms of the boundaries page (SPEC §6). The choices offered are the user's own: the
catalog's capabilities, and places that are "everywhere", a character the user knows, one of
the user's conversations or a scene in one, so another user's conversation is refused as bad
input."""

from django import forms

# The page's three controls (SPEC §6, D8), as rule effects.
EFFECT_CHOICES = [("allow", "Always allow"), ("ask", "Always ask first"), ("deny", "Never")]


class BoundaryForm(forms.Form):
    capability = forms.ChoiceField(label="What")
    effect = forms.ChoiceField(label="Your choice", choices=EFFECT_CHOICES)
    where = forms.ChoiceField(label="Where")

    def __init__(self, *args, capabilities=(), places=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["capability"].choices = list(capabilities)
        self.fields["where"].choices = list(places)
        self.fields["where"].error_messages["invalid_choice"] = (
            "Choose everywhere, one of your characters, one of your conversations or a scene in "
            "one."
        )

    def scope(self) -> dict:
        """The rule scope (SPEC §6) for the chosen place."""
        kind, _, ref = self.cleaned_data["where"].partition(":")
        if kind == "character":
            return {"kind": "character", "character": ref}
        if kind == "conversation":
            return {"kind": "conversation", "conversation": ref}
        if kind == "scene":
            conversation, _, scene = ref.partition(":")
            return {"kind": "scene", "conversation": conversation, "scene": scene}
        return {"kind": "global"}
