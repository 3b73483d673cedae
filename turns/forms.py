"""Forms of the conversation and "your data" pages."""

from django import forms

from memory.domain import known_time_zones


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


# ---------------------------------------------------------------------------------------------
# The time zone the pages show times in


def _time_zone_choices():
    """The product's zone first, then every IANA zone grouped by region ("Europe", "America"
    …), so a select list stays usable with a keyboard (type to jump)."""
    from django.conf import settings

    regions: dict[str, list[tuple[str, str]]] = {}
    others: list[tuple[str, str]] = []
    for name in sorted(known_time_zones()):
        region, _, place = name.partition("/")
        if place and region not in ("Etc", "SystemV", "US", "Canada", "Brazil", "Mexico", "Chile"):
            regions.setdefault(region, []).append((name, place.replace("_", " ").replace("/", " – ")))
        else:
            others.append((name, name))
    return [("", f"The service's time zone ({settings.TIME_ZONE})"),
            *sorted(regions.items()), ("Other", others)]


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(label="Your time zone", required=False, choices=_time_zone_choices)
