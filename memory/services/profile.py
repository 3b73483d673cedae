"""A user's memory profile: the time zone the pages show times in, and the I8 switches
(`learn`, `use`) with who changed them last and when."""

from __future__ import annotations

import logging

from django.db import transaction

from config.clock import db_now, known_time_zones
from config.errors import ValidationError

from .. import changes
from ..models import SETTINGS_CHANGED_BY, MemoryProfile
from ..switches import MemorySettings, settings_of_profile
from .asserting import lock_profile

log = logging.getLogger("companion.memory")


def profile_set_time_zone(*, user, time_zone: str) -> MemoryProfile:
    """The zone the pages show this user's times in: an IANA name, or "" for the product's
    (`settings.TIME_ZONE`)."""
    if not isinstance(time_zone, str) or (time_zone and time_zone not in known_time_zones()):
        raise ValidationError("Choose a time zone from the list.", field="time_zone")
    with transaction.atomic():
        profile = lock_profile(user)
        if profile.time_zone != time_zone:
            profile.time_zone = time_zone
            profile.save(update_fields=["time_zone"])
    return profile


def ensure_profile(user) -> MemoryProfile:
    profile, _ = MemoryProfile.objects.get_or_create(user=user)
    return profile


def memory_settings_set(
    *, user, changed_by: str, learn: bool | None = None, use: bool | None = None
) -> MemorySettings:
    """I8: switch learning and/or memory use on or off for `user` (`None` leaves a switch as
    it is). A change records when (database clock) and through what (`user` on the pages,
    `api`, `support`) for support to see; setting a switch to the value it has changes
    nothing and records nothing. Neither switch deletes anything."""
    if changed_by not in SETTINGS_CHANGED_BY:
        raise ValidationError("Unknown origin of the change.", field="changed_by")
    for name, value in (("learn", learn), ("use", use)):
        if value is not None and not isinstance(value, bool):
            raise ValidationError("Must be true or false.", field=name)
    with transaction.atomic():
        profile = lock_profile(user)
        wanted = {"learn": learn, "use": use}
        changed = [
            name
            for name, value in wanted.items()
            if value is not None and getattr(profile, name) != value
        ]
        if changed:
            for name in changed:
                setattr(profile, name, wanted[name])
            profile.settings_changed_at = db_now()
            profile.settings_changed_by = changed_by
            profile.save(update_fields=[*changed, "settings_changed_at", "settings_changed_by"])
            changes.settings_changed(user, profile)  # V1
            log.info(
                "memory_settings_set user_id=%s learn=%s use=%s changed_by=%s",
                user.pk,
                profile.learn,
                profile.use,
                changed_by,
            )
    # Later reads in this request see the new switches.
    user.memory_profile = profile
    return settings_of_profile(profile)
