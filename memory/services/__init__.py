"""Memory writers (DESIGN habit 2): the only code that changes memory state. Each service runs
in one transaction, reads the database clock once, holds the user's memory lock while it
decides, calls the pure core, and saves.

One module per job: `asserting` (assert, W1–W9, and the write plan's rows), `teaching` (what a
text teaches, §8: the turn's and `POST /memory/remember`'s writes), `record_actions`
(the user's confirm, correct, retract and restore, SPEC §2 and W10), `statuses` (W12) and
`profile` (the time zone and the I8 switches). The services below are memory's write API,
named here for the other apps and the tests; memory's own modules import the module that
holds a name."""

from .asserting import AssertResult, log_learned, memory_assert
from .profile import ensure_profile, memory_settings_set, profile_set_time_zone
from .record_actions import (
    RetractResult,
    memory_confirm,
    memory_correct,
    memory_restore,
    memory_retract,
)
from .statuses import memory_normalise
from .teaching import memory_learn, memory_remember

__all__ = [
    "AssertResult",
    "RetractResult",
    "ensure_profile",
    "log_learned",
    "memory_assert",
    "memory_confirm",
    "memory_correct",
    "memory_learn",
    "memory_normalise",
    "memory_remember",
    "memory_restore",
    "memory_retract",
    "memory_settings_set",
    "profile_set_time_zone",
]
