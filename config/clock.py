"""The database clock (SPEC §0): every time the server assigns comes from the database, read
once per request or transaction, never from a worker's clock.

On PostgreSQL this is `clock_timestamp()` (not `now()`, which is frozen for a whole
transaction and would give every write of a long transaction, or of a test, the same time).
SQLite is embedded: its clock *is* this process's clock, read with microsecond precision.
"""

from datetime import UTC, datetime

from django.db import connection
from django.utils import timezone


def db_now() -> datetime:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")
            value = cursor.fetchone()[0]
        return value.astimezone(UTC)
    return timezone.now()


def iso_z(value: datetime | None) -> str | None:
    """A time as the API, the export and the events write it: ISO 8601, UTC written `Z`."""
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
