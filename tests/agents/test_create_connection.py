"""`manage.py create_connection` (SPEC §15 M1): the token alone on the last line of its output."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents import credentials

pytestmark = pytest.mark.django_db


def test_it_prints_the_token_alone_on_the_last_line(sam, rowan):
    out = io.StringIO()
    call_command(
        "create_connection",
        "sam",
        "--name",
        "Ops",
        "--access",
        "write",
        "--character",
        "captain-rowan",
        stdout=out,
        stderr=io.StringIO(),
    )
    token = out.getvalue().splitlines()[-1]
    connection = credentials.authenticate(token)
    assert (connection.user, connection.name, connection.access) == (sam, "Ops", "write")
    assert list(connection.characters.values_list("slug", flat=True)) == ["captain-rowan"]


@pytest.mark.parametrize(
    "argv", [["nobody", "--name", "x"], ["sam", "--name", "x", "--character", "nobody"]]
)
def test_it_refuses_an_unknown_user_or_character(sam, argv):
    with pytest.raises(CommandError):
        call_command("create_connection", *argv, stdout=io.StringIO(), stderr=io.StringIO())
