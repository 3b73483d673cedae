"""Forms of the conversation and "your data" pages."""

from django import forms


class DeleteAccountForm(forms.Form):
    """Deleting an account cannot be undone, so the user types their username to confirm."""

    confirm = forms.CharField(
        label="Type your username to confirm", max_length=150, strip=True,
        error_messages={"required": "Type your username to confirm, or go back."},
    )

    def __init__(self, *args, username: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.username = username

    def clean_confirm(self):
        value = self.cleaned_data["confirm"]
        if value != self.username:
            raise forms.ValidationError("That is not your username, so nothing was deleted.")
        return value
