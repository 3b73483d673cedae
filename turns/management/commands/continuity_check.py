from django.core.management.base import BaseCommand, CommandError

from turns.continuity import play


class Command(BaseCommand):
    help = (
        "Play the rooftop-greenhouse continuity protocol through the real services on a "
        "throwaway user and score the prompt plans (SPEC §11). Exits non-zero on any failure."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--keep", action="store_true", help="Keep the throwaway user afterwards."
        )
        parser.add_argument("--username", default=None)

    def handle(self, *args, keep=False, username=None, **options):
        card, user = play(username=username, keep=keep)
        self.stdout.write("Continuity check — rooftop greenhouse protocol")
        for line in card.lines():
            self.stdout.write(line)
        if not card.passed:
            raise CommandError("continuity check failed")
