import secrets

from django.core.management.base import BaseCommand

from support.services import support_staff_put


class Command(BaseCommand):
    help = (
        "Create (or update) a support staff member: a staff account in the Support group. "
        "Prints the password when it made one."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", default=None, help="Default: a new random password.")
        parser.add_argument(
            "--private-text",
            action="store_true",
            help="Also grant view_private_text: may open reveals of one "
            "user's private text at a time, with a reason (SPEC S1; "
            "every reveal is logged).",
        )

    def handle(self, *args, username, password, private_text, **options):
        generated = password is None
        password = password or secrets.token_urlsafe(12)
        support_staff_put(username=username, password=password, private_text=private_text)
        self.stdout.write(
            self.style.SUCCESS(
                f"Support staff {username!r} is ready"
                f"{' (may open reveals of private text)' if private_text else ''}."
            )
        )
        if generated:
            self.stdout.write(f"  Password: {password!r}")
