"""`python -m tests.browser.manage_runner`: management commands against the README server's
database, one per line of standard input (a JSON list: the command and its arguments, as
`manage.py` takes them), each answered by one line of standard output (a JSON object: `code`,
`stdout`, `stderr`). Django starts once for all of them, where `manage.py` starts it for every
command: the browser tests make a new person (`load_demo`) for every test.

Between commands nothing of the process is kept that the server could change meanwhile: the
database connections are closed and the process's caches emptied. Anything a command writes
to the process's own standard output, outside its answer, goes to standard error."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback


def _forget_process_state() -> None:
    from django.db import connections

    from config import catalog
    from memory.storage import MEMORY_CACHE
    from turns.storage import HELD_HISTORIES

    connections.close_all()
    catalog.clear_all()
    MEMORY_CACHE.clear()
    HELD_HISTORIES.clear()


def run(args: list[str]) -> dict:
    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            call_command(*args, stdout=out, stderr=err)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception:  # noqa: BLE001 - the caller sees the traceback, as from manage.py
        code = 1
        err.write(traceback.format_exc())
    finally:
        _forget_process_state()
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray writes never reach the answers
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    for line in sys.stdin:
        answers.write(json.dumps(run(json.loads(line))) + "\n")


if __name__ == "__main__":
    main()
