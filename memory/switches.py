"""The user's memory switches (SPEC §7, I8): reads. The writer is
`memory.services.memory_settings_set`.

`learn` (the companion may learn new memories from messages) and `use` (memories may enter
prompts) are both on by default, and for a user who has no memory profile yet. The hot paths
(turn creation, resolve, the prompt plan) load the profile together with the user in a query
they run anyway (`select_related("memory_profile")`), so reading the switches costs them no
query; `memory_settings_of` reads it only when it was not loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .domain import REASON_MEMORY_OFF, Exclusion, Projection
from .models import MemoryProfile


@dataclass(frozen=True)
class MemorySettings:
    learn: bool = True
    use: bool = True
    changed_at: datetime | None = None
    changed_by: str | None = None  # user | api | support; None until first changed


def settings_of_profile(profile: MemoryProfile | None) -> MemorySettings:
    if profile is None:
        return MemorySettings()
    return MemorySettings(
        learn=profile.learn,
        use=profile.use,
        changed_at=profile.settings_changed_at,
        changed_by=profile.settings_changed_by or None,
    )


def memory_settings_of(user) -> MemorySettings:
    """The switches of `user`: from the profile loaded with it when there is one (no query),
    else read once."""
    try:
        profile = user.memory_profile
    except MemoryProfile.DoesNotExist:
        profile = None
    return settings_of_profile(profile)


def prompt_projection(projection: Projection, settings: MemorySettings) -> Projection:
    """I8: with `use` off nothing is projected: every memory that would have entered the
    prompt is excluded with reason `memory-off`; what P1–P3 excluded keeps its own reason
    (one reason per record, the step that decided it). With `use` on, the projection as is."""
    if settings.use:
        return projection
    reasons = {e.id: e.reason for e in projection.excluded}
    for item in projection.prompt:
        reasons[item.record.id] = REASON_MEMORY_OFF
    return Projection(
        prompt=(),
        excluded=tuple(Exclusion(record_id, reasons[record_id]) for record_id in sorted(reasons)),
    )
