"""What "Your data" shows and says (SPEC §9, S2): what is stored about you, counted; the time
zone form; support's reveals of your data; and the words after choosing a time zone or
forgetting everything."""

from __future__ import annotations

from django.conf import settings

from memory.forgetting import withheld_total
from support.selectors import reveals_of  # S2: "Support access" on Your data

from .forms import zone_words
from .selectors import data_counts


def data_page(user, time_zone_form) -> dict:
    """The "Your data" page's context, with `time_zone_form` as it is to be shown."""
    return {
        "counts": data_counts(user),
        "time_zone_form": time_zone_form,
        "reveals": reveals_of(user),
    }


def time_zone_words(zone: str) -> str:
    """The message after choosing `zone` ("" is the service's own)."""
    if zone:
        return f"Times are now shown in {zone_words(zone)}."
    return f"Times are now shown in the service's time zone, {settings.TIME_ZONE}."


def forgot_everything_words(tombstones) -> str:
    """The message after forgetting everything (F1, F6): and how many messages the companion no
    longer sees, each counted once."""
    n = withheld_total(tombstones)
    seen = (
        f" The companion no longer sees the {n} message{'' if n == 1 else 's'} that held it."
        if n
        else ""
    )
    return (
        "Forgot everything the companion remembered about you, everywhere."
        f"{seen} Old messages will not bring it back; your conversations "
        "stay until you delete them."
    )
