"""Demo data for `make run`: a user who can sign in, a character, a conversation, and memories
that show a correction and a forgotten key. Safe to run again: a demo user already there is
kept with everything they changed and gets a new password; `--reset` builds the demo anew."""

import secrets

from django.core.management.base import BaseCommand
from django.db import transaction

from turns import demo


class Command(BaseCommand):
    help = "Load the demo user and their companion's memories; prints the password."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default=None, help="Default: a new random password.")
        parser.add_argument(
            "--address",
            default="http://127.0.0.1:8000",
            help="Where the server answers, for the sign-in line it prints.",
        )
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Delete the demo user, if there, with everything they did, and load it anew.",
        )

    def handle(self, *args, username, password, address, reset, **options):
        password = password or secrets.token_urlsafe(9)
        with transaction.atomic():
            summary = demo.load(username=username, password=password, reset=reset)
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
        for line in summary:
            self.stdout.write(f"  {line}")
        self.stdout.write("")
        self.stdout.write(
            f"  Sign in at {address.rstrip('/')}/login/ as {username!r} with password {password!r}"
        )
