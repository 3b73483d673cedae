"""Forms of the conversation and "your data" pages."""

import zoneinfo
from importlib import resources
from pathlib import Path

from django import forms

from config.clock import known_time_zones


class DeleteAccountForm(forms.Form):
    """Deleting an account cannot be undone, so the user types their username to confirm."""

    confirm = forms.CharField(
        label="Type your username to confirm",
        max_length=150,
        strip=True,
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


def canonical_time_zones() -> list[str]:
    """The zones a person chooses from: each place's canonical IANA name once (the `zone.tab`
    of the tz database that `zoneinfo` reads: Asia/Kolkata, never Asia/Calcutta; no legacy
    aliases, no Etc/GMT±N, no "Factory" or "localtime"), and UTC. Only names this machine's
    `zoneinfo` knows."""
    known = known_time_zones()
    text = ""
    try:
        text = (
            resources.files("tzdata").joinpath("zoneinfo", "zone.tab").read_text(encoding="utf-8")
        )
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        for root in zoneinfo.TZPATH:
            try:
                text = (Path(root) / "zone.tab").read_text(encoding="utf-8")
                break
            except OSError:
                continue
    names = {
        line.split("\t")[2]
        for line in text.splitlines()
        if line and not line.startswith("#") and len(line.split("\t")) >= 3
    }
    return sorted(name for name in names | {"UTC"} if name in known)


def zone_place(name: str) -> str:
    """A zone as the list names it: its place ("Argentina – Buenos Aires"), or the name itself
    for one without a region ("UTC")."""
    _, _, place = name.partition("/")
    return place.replace("_", " ").replace("/", " – ") if place else name


def zone_words(name: str) -> str:
    """A zone in the list's own words: "Argentina – Buenos Aires (America)", "UTC"."""
    region, _, place = name.partition("/")
    return f"{zone_place(name)} ({region})" if place else name


def _time_zone_choices():
    """The product's zone first, then the canonical zones grouped by region ("Europe",
    "America" …) as option groups, each place named once, so the list stays usable with a
    keyboard (type to jump)."""
    from django.conf import settings

    regions: dict[str, list[tuple[str, str]]] = {}
    others: list[tuple[str, str]] = []
    for name in canonical_time_zones():
        region, _, place = name.partition("/")
        if place:
            regions.setdefault(region, []).append((name, zone_place(name)))
        else:
            others.append((name, name))
    return [
        ("", f"The service's time zone ({settings.TIME_ZONE})"),
        *sorted(regions.items()),
        ("Other", others),
    ]


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(
        label="Your time zone", required=False, choices=_time_zone_choices
    )
