from django.core.management.base import BaseCommand

from events.delivery import prune


class Command(BaseCommand):
    help = (
        "Delete events older than EVENTS_RETENTION_DAYS (SPEC V2); the worker also does this "
        "hourly."
    )

    def handle(self, *args, **options):
        self.stdout.write(f"Deleted {prune()} events and their deliveries.")
