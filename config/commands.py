"""What the commands that make a secret token share (`create_api_token`, `create_connection`):
the token is printed once, alone on the last line of standard output so a script can take it,
with what was made said on standard error; only the token's hash is stored."""

from __future__ import annotations

from django.core.management.base import BaseCommand

PRINTED_ONCE = "The token is printed once, alone on the last line; only its hash is stored."


class TokenCommand(BaseCommand):
    """A subclass's `issue` makes the token and answers (what was made, in words; the token)."""

    def issue(self, **options) -> tuple[str, str]:
        raise NotImplementedError

    def handle(self, *args, **options):
        said, token = self.issue(**options)
        self.stderr.write(said)
        self.stdout.write(token)
