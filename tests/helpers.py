import json
import logging
import re
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from config.api import SafeJSONRenderer
from config.problems import PROBLEM_CODES

ON_POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")

# DESIGN: concurrency claims are proven with real threads on PostgreSQL; SQLite serialises
# writers, so there the same tests would prove nothing.
postgres_only = pytest.mark.skipif(
    not ON_POSTGRES, reason="needs PostgreSQL: real concurrent transactions and row locks"
)


def reseed_catalog() -> None:
    """Run the data migrations' seed functions again (each is idempotent)."""
    from importlib import import_module

    from django.apps import apps

    import_module("memory.migrations.0002_seed_keys").seed(apps, None)
    import_module("memory.migrations.0005_pages_time_zone_templates_forgotten_by").seed(apps, None)
    import_module("memory.migrations.0007_pin_preferred_name").seed(apps, None)
    import_module("policy.migrations.0002_seed_capabilities").seed(apps, None)
    # The Support group: permissions themselves come back with the flush's post_migrate.
    from support.services import support_group_ensure

    support_group_ensure()


class Collect(logging.Handler):
    """A log handler that keeps every record, for tests of what is (and is not) logged."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def redis_reachable(host: str = "127.0.0.1", port: int = 6379) -> bool:
    """Whether a Redis server answers PING on loopback (tests against it skip, saying why,
    where none runs)."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def children(pid: int) -> list[int]:
    """The ids of the processes whose parent is `pid` (a server's workers), from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def stop_process(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Stop a server the test started: terminate, then kill if it does not end in time."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


PROBLEM = "application/problem+json"


def assert_problem(response, status: int, code: str, field: str | None = None) -> dict:
    """SPEC §10: the answer is RFC 9457 problem details of `status` with the stable `code`,
    its type the code's page, naming `field` among its errors when given. Returns the body.
    Every problem has the one shape, wherever it is answered from: the registry's title for
    its code, and the bytes the API's renderer makes of it."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = json.loads(response.content)
    assert (body["code"], body["status"], body["type"]) == (code, status, f"/problems/{code}"), body
    assert list(body)[:5] == ["type", "title", "status", "detail", "code"], body
    assert body["title"] == PROBLEM_CODES[code].title and body["detail"], body
    assert response.content == SafeJSONRenderer().render(body)
    if field is not None:
        assert field in body["errors"], body
    return body


def text(response) -> str:
    """A page without its markup, whitespace collapsed: what a reader sees."""
    html = response.content.decode()
    html = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", html, flags=re.S)
    return (
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
        .replace("&#x27;", "'")
        .replace("&quot;", '"')
    )


def follow_messages(response) -> list[str]:
    """The messages a page's response carries (django.contrib.messages), as text."""
    return [str(m) for m in response.context["messages"]]


def live(key, user):
    """The user's newest record of `key` that is not forgotten, or None."""
    from memory.models import MemoryRecord

    return (
        MemoryRecord.objects.filter(user=user, key=key)
        .exclude(status="forgotten")
        .order_by("-version")
        .first()
    )


def committed():
    """Around a request inside a test's transaction: what the request's transaction does once
    it commits (`transaction.on_commit`, e.g. `memory.state` keeping the state its writes
    left) runs when the block ends, as in production, where every request commits; the
    test's own transaction never does."""
    from django.test import TestCase

    return TestCase.captureOnCommitCallbacks(execute=True)
