"""A process of its own for tests/memory/test_memory_cache_processes.py: reads one request per
line on standard input ({"method", "path", "body"?, "compare"?}), answers it through Django's
whole request path (the catalog and memory caches of this process included) and prints
{"status", "body"} — with "compare", also the same request answered with this process's
memory cache out of the way ("uncached"); and how many states the cache has given so far,
as they were kept or caught up with what changed since ("from_cache")."""

import json
import os
import sys
from unittest import mock

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.test import Client  # noqa: E402

from memory import storage  # noqa: E402


def main(token: str) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def call(method, path, body):
        if method == "GET":
            r = client.get(path, body or {})
        else:
            r = client.generic(
                method, path, json.dumps(body or {}), content_type="application/json"
            )
        return {"status": r.status_code, "body": r.json() if r.content else None}

    for line in sys.stdin:
        command = json.loads(line)
        out = call(command["method"], command["path"], command.get("body"))
        if command.get("compare"):
            with (
                mock.patch.object(storage.MEMORY_CACHE, "get", return_value=None),
                mock.patch.object(storage.MEMORY_CACHE, "put"),
            ):
                out["uncached"] = call(command["method"], command["path"], command.get("body"))
        out["from_cache"] = storage.MEMORY_CACHE.reused + storage.MEMORY_CACHE.caught_up
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
