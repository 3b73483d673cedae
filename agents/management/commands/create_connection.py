from django.core.management.base import CommandError

from agents.models import ACCESS_ORDER, EXPIRY_DAYS
from agents.services import connection_create
from config.commands import PRINTED_ONCE, TokenCommand
from config.errors import ValidationError
from conversations.selectors import user_by_ref


class Command(TokenCommand):
    help = f"Connect an assistant to a user's memory over MCP (SPEC §15 M1). {PRINTED_ONCE}"

    def add_arguments(self, parser):
        parser.add_argument("user", help="The username the connection acts for.")
        parser.add_argument("--name", required=True, help="What the connection is, in words.")
        parser.add_argument("--access", choices=ACCESS_ORDER, default="read")
        parser.add_argument(
            "--character",
            action="append",
            dest="characters",
            metavar="SLUG",
            help="A character it may act for (repeat for more); all characters without one.",
        )
        parser.add_argument("--days", type=int, choices=EXPIRY_DAYS, default=90)

    def issue(self, *, user, name, access, characters, days, **options):
        try:
            owner = user_by_ref(user)
            created = connection_create(
                user=owner, name=name, access=access, characters=characters, days=days
            )
        except ValidationError as exc:
            raise CommandError(exc.detail) from None
        connection = created.connection
        said = (
            f"Connected {connection.name!r} ({connection.prefix}…) for {owner.username}, "
            f"{access} access, until {connection.expires_at:%Y-%m-%d}. Store the token now: "
            "it is not shown again."
        )
        return said, created.token
