from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from memory.services import memory_normalise


class Command(BaseCommand):
    help = (
        "Write stored statuses (expired, superseded) from the records' windows and corrections "
        "(SPEC W12). Idempotent and safe at any time; resolutions never depend on it having run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", help="Only this user ref.")

    def handle(self, *args, user=None, **options):
        target = get_user_model().objects.get(username=user) if user else None
        changed = memory_normalise(user=target)
        self.stdout.write(f"{changed} status change(s) written.")
