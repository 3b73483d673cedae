"""Demo data for `make run`: a user who can sign in, a character, a conversation, and memories
that show a correction and a forgotten key. Safe to run again: the demo user is rebuilt."""

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

    def handle(self, *args, username, password, address, **options):
        password = password or secrets.token_urlsafe(9)
        with transaction.atomic():
            summary = demo.build(username=username, password=password)
        self.stdout.write(self.style.SUCCESS("Demo data loaded."))
        for line in summary:
            self.stdout.write(f"  {line}")
        self.stdout.write("")
        self.stdout.write(
            f"  Sign in at {address.rstrip('/')}/login/ as {username!r} with password {password!r}"
        )
