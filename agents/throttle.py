"""Each connection's throttle bucket (SPEC §15 M2, O7): an `/mcp` request counts against its
connection at the `connection` rate and against its user at the `runtime` rate, through the
same counters and shared store as the API's throttles (`config.throttle`). The connection's
rate is far below the user's, so a runaway assistant is stopped before the user's companion
is."""

from __future__ import annotations

import time

from django.conf import settings

from config.throttle import RuntimeThrottle, longest_wait, user_key

from .models import Connection


def connection_key(connection: Connection) -> str:
    return f"throttle_connection_{connection.pk}"


def wait_for(connection: Connection) -> float | None:
    """Count one request of `connection`: None when it may go on, else the seconds to wait."""
    rates = settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {})
    named = [
        (connection_key(connection), rates.get("connection")),
        (user_key("runtime", connection.user.username), rates.get("runtime")),
    ]
    parse = RuntimeThrottle().parse_rate
    counters = [(key, *reversed(parse(rate))) for key, rate in named if rate]
    if not counters:
        return None
    return longest_wait(counters, time.time())
