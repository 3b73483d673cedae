from config.commands import PRINTED_ONCE, TokenCommand
from config.models import ApiToken


class Command(TokenCommand):
    help = f"Create a chat-runtime API token. {PRINTED_ONCE}"

    def add_arguments(self, parser):
        parser.add_argument("name", help="What the token is for, e.g. 'chat-runtime-eu'.")

    def issue(self, *, name, **options):
        token, raw = ApiToken.issue(name)
        said = (
            f"Created token {token.name!r} ({token.prefix}…). Store it now: it is not shown again."
        )
        return said, raw
