"""`make run` as a newcomer meets it: what its processes are started with. The commands are read
from `make -n run` (a dry run: nothing is built, migrated or served)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def dry_run(*args: str) -> list[str]:
    """The shell lines `make run` would run, continuation lines joined."""
    result = subprocess.run(
        ["make", "-n", "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": os.environ["PATH"]},
        check=True,
    )
    return result.stdout.replace("\\\n", " ").splitlines()


def line_of(lines: list[str], command: str) -> str:
    [line] = [line for line in lines if f"manage.py {command}" in line]
    return line


def test_it_lets_make_runs_server_and_worker_take_a_webhook_receiver_on_this_machine():
    """V3: `make run` sets the two settings that allow an http receiver on loopback for its
    server (registration) and its events worker (delivery, checked again)."""
    lines = dry_run()
    for command in ("runserver", "events_worker"):
        line = line_of(lines, command)
        assert "WEBHOOK_ALLOW_HTTP=true WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true" in line, line


def test_it_keeps_https_and_public_addresses_only_in_production():
    """V3: production, where nothing sets them, takes https to public addresses only."""
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_ENV": "production",
        "SECRET_KEY": "a-production-secret-" + "x" * 40,
    }
    script = (
        "from config import settings; "
        "print(settings.WEBHOOK_ALLOW_HTTP, settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
        check=True,
    )
    assert result.stdout.split() == ["False", "False"]


def test_it_checks_the_port_before_anything_else_make_run_does():
    """The port check is `make run`'s first command, with its HOST and PORT: a taken port stops
    the run before the demo's "Sign in at …" line (issue 42)."""
    lines = [line for line in dry_run("HOST=127.0.0.2", "PORT=8123") if "manage.py" in line]
    assert lines[0].endswith("manage.py check_port --host 127.0.0.2 --port 8123")
    assert "runserver 127.0.0.2:8123" in lines[-1]


def test_it_keeps_the_demo_unless_demo_reset_is_asked_for():
    """`make run` loads the demo keeping its user; `make run DEMO=reset` loads it anew; any
    other DEMO stops make before it runs anything."""
    assert line_of(dry_run(), "load_demo").rstrip().endswith("--address http://127.0.0.1:8000")
    assert line_of(dry_run("DEMO=reset"), "load_demo").endswith(" --reset")
    refused = subprocess.run(
        ["make", "-n", "run", "DEMO=keep"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": os.environ["PATH"]},
    )
    assert refused.returncode != 0 and refused.stdout == ""
    assert "DEMO=keep is not known: DEMO=reset deletes the demo user" in refused.stderr
