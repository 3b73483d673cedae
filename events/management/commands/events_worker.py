"""The events worker (SPEC V3), a process apart from the web workers: it follows the feed and
turns new events into deliveries (the dispatcher), wakes lanes that are due, prunes old events
(V2), and runs the delivery tasks of Django's tasks API in `--threads` threads, so a slow
lane (one endpoint's deliveries for one user) holds one thread and no other lane's deliveries;
an endpoint that hangs for many users holds at most `WEBHOOK_LANES_PER_ENDPOINT` threads (by
default `EVENTS_WORKER_THREADS` - 1) while it hangs, its other lanes waiting their turn. SIGTERM or
SIGINT stop it after the deliveries in flight; a SIGKILL loses nothing (a killed delivery's
lane is taken up again once its lease ends)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError, close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Worker

from events import delivery
from events.tasks import QUEUE, enqueue

log = logging.getLogger("companion.events")


class Command(BaseCommand):
    help = "Deliver events to the registered webhook endpoints (SPEC V3)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--threads",
            type=int,
            default=settings.EVENTS_WORKER_THREADS,
            help="Deliveries run at once (default EVENTS_WORKER_THREADS).",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=settings.EVENTS_WORKER_INTERVAL,
            help="Seconds between reads of the feed (default EVENTS_WORKER_INTERVAL).",
        )

    def handle(self, *args, threads: int, interval: float, **options):
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        if settings.EVENTS_WORKER_METRICS_PORT:
            from prometheus_client import start_http_server

            start_http_server(settings.EVENTS_WORKER_METRICS_PORT, addr="127.0.0.1")
        name = f"{socket.gethostname()}-{os.getpid()}"
        workers = [
            Worker(
                queue_names=[QUEUE],
                interval=min(interval, 1.0),
                batch=False,
                backend_name="default",
                startup_delay=False,
                max_tasks=None,
                worker_id=f"{name}-{i}"[:64],
                excluded_queue_names=[],
            )
            for i in range(max(threads, 1))
        ]
        runners = [threading.Thread(target=_run, args=(w, stop), daemon=True) for w in workers]
        for runner in runners:
            runner.start()
        self.stdout.write(f"events worker {name}: {len(workers)} delivery threads", ending="\n")
        self.stdout.flush()
        last_prune = 0.0
        while not stop.is_set():
            try:
                close_old_connections()
                while delivery.dispatch():
                    pass
                delivery.wake_due(enqueue)
                if time.monotonic() - last_prune >= settings.EVENTS_PRUNE_INTERVAL:
                    delivery.prune()
                    last_prune = time.monotonic()
                delivery.gauges()
            except DatabaseError as exc:  # the database away: wait for it, lose nothing
                _database_away(exc)
            stop.wait(interval)
        for worker in workers:
            worker.running = False
        for runner in runners:
            runner.join(timeout=settings.WEBHOOK_TIMEOUT_SECONDS + 5)
        connection.close()


def _run(worker: Worker, stop: threading.Event) -> None:
    """A delivery thread: django-tasks-db's worker loop, started again after a database
    outage (a delivery it was making is taken up again once its lane's lease ends)."""
    while not stop.is_set():
        try:
            worker.run()
            return
        except DatabaseError as exc:
            _database_away(exc)
            stop.wait(1.0)
        finally:
            connection.close()


def _database_away(exc: DatabaseError) -> None:
    log.warning("events_worker_database_unavailable error=%s", type(exc).__name__)
    try:
        connection.close()
    except DatabaseError:
        pass
