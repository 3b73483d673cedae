from django.core.management.base import BaseCommand

from config.models import ApiToken


class Command(BaseCommand):
    help = (
        "Create a chat-runtime API token. The token is printed once, alone on the last line; only "
        "its hash is stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="What the token is for, e.g. 'chat-runtime-eu'.")

    def handle(self, *args, name, **options):
        token, raw = ApiToken.issue(name)
        self.stderr.write(
            f"Created token {token.name!r} ({token.prefix}…). Store it now: it is not shown again."
        )
        self.stdout.write(raw)
