"""The database clock (SPEC §0): every time the server assigns comes from the database, read
once per request or transaction, never from a worker's clock.

On PostgreSQL this is `clock_timestamp()` (not `now()`, which is frozen for a whole
transaction and would give every write of a long transaction, or of a test, the same time).
SQLite is embedded: its clock *is* this process's clock, read with microsecond precision.
"""

import zoneinfo
from datetime import UTC, datetime
from functools import lru_cache

from django.db import connection
from django.utils import timezone

from config.storage import clock_timestamp


def db_now() -> datetime:
    if connection.vendor == "postgresql":
        return clock_timestamp().astimezone(UTC)
    return timezone.now()


def iso_z(value: datetime | None) -> str | None:
    """A time as the API, the export and the events write it: ISO 8601, UTC written `Z`."""
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


@lru_cache(maxsize=1)
def known_time_zones() -> frozenset[str]:
    """The IANA zone names this machine knows (the `tzdata` package ships them everywhere),
    read once per process: the pages show times in the user's zone, and a profile's zone is
    one of these."""
    return frozenset(zoneinfo.available_timezones())
