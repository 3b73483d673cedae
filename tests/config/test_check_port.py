"""`manage.py check_port`, `make run`'s first step: an address where something already answers
or holds the port stops the run, saying so plainly, before any "Sign in at …" is printed."""

import socket
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def listening():
    """A server socket on a loopback port the system chose: someone else's server."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def check(port: int) -> tuple[int, str]:
    err = StringIO()
    try:
        call_command("check_port", "--host", "127.0.0.1", "--port", str(port), stderr=err)
    except SystemExit as stop:
        return stop.code, err.getvalue()
    return 0, err.getvalue()


def test_it_stops_when_another_server_answers_on_the_port(listening):
    assert check(listening) == (
        1,
        f"Cannot serve on 127.0.0.1:{listening}: another server already answers there. Nothing "
        f"was started: stop what uses it, or choose another address "
        f"(make run PORT={listening + 1}).\n",
    )


def test_it_stops_when_a_program_holds_the_port_without_answering():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))  # bound, never listening: nothing answers, yet it is taken
        port = held.getsockname()[1]
        code, said = check(port)
    assert code == 1
    assert said.startswith(f"Cannot serve on 127.0.0.1:{port}: another program holds the port.")


def test_it_says_nothing_and_lets_the_run_go_on_when_the_port_is_free():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert check(port) == (0, "")


def test_it_exits_non_zero_from_the_shell_as_make_runs_it(listening):
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "check_port",
            "--host",
            "127.0.0.1",
            "--port",
            str(listening),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert "another server already answers there" in result.stderr
