"""`make run`'s first step: make sure the address it is about to serve on is free, so it never
prints "Sign in at …" for an address where another program's server answers."""

import errno
import socket

from django.core.management.base import BaseCommand


def why_taken(host: str, port: int) -> str | None:
    """Why a server cannot take `host:port`, or None when it can: something answers there, or
    holds the port without answering (bound, not listening), or the address cannot be
    listened on at all."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return "another server already answers there"
    except OSError:
        pass
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (OSError, UnicodeError):
        return "the host does not resolve"
    with socket.socket(family, kind, proto) as probe:
        # As the development server binds: a port left in TIME_WAIT by a stopped server is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return "another program holds the port"
            return f"it cannot be listened on ({error.strerror})"
    return None


class Command(BaseCommand):
    help = "Exit non-zero, saying why, when a server cannot take HOST:PORT; silent when it can."
    requires_system_checks = []  # it reads no model, no database and no cache

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, host, port, **options):
        reason = why_taken(host, port)
        if reason is None:
            return
        self.stderr.write(
            f"Cannot serve on {host}:{port}: {reason}. Nothing was started: stop what uses it, "
            f"or choose another address (make run PORT={port + 1})."
        )
        raise SystemExit(1)
