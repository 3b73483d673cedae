"""SPEC V2 under concurrent writers, on PostgreSQL: the feed hands out an event only once no
running transaction can precede it (xid8 below the snapshot's xmin), so a reader that always
passes the last cursor misses nothing, even when a transaction that wrote a lower event id
commits after a higher one was visible. Real threads, each with its own connection.

The horizon is the cluster's: a transaction of another process (the suite's other test
process, in its own database) also holds the feed back until it ends. So after the writers are
done the reader reads on until it has caught up with what committed, within a bound, instead of
taking one empty page for the end."""

import random
import threading
import time

import pytest
from django.db import connection, transaction
from django.utils import timezone

from events import outbox
from events.feed import feed_page
from events.models import Event
from tests.helpers import postgres_only

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]

WRITERS = 8
TRANSACTIONS = 20
WAIT = 20  # seconds: the bound of every wait
CATCH_UP = 120  # seconds: the bound of waiting for the cluster's older transactions to end


def _event(n: int):
    return outbox.conversation_deleted(f"writer{n}", conversation=f"c{n}", at=timezone.now())


def _in_thread(fn):
    def run():
        try:
            fn()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def read_all(after=None, limit=100):
    page = feed_page(after=after, limit=limit)
    return [e["id"] for e in page.events], page.next


def _read_until_some(cursor):
    """The next page once the cluster's older transactions have ended (bounded)."""
    deadline = time.monotonic() + CATCH_UP
    while True:
        seen, after = read_all(cursor)
        if seen or time.monotonic() > deadline:
            return seen, after
        time.sleep(0.05)


def test_it_holds_back_for_a_transaction_that_commits_late_instead_of_overtaking():
    first_written, second_committed, release = (
        threading.Event(),
        threading.Event(),
        threading.Event(),
    )
    early_event, late_event = _event(1), _event(2)

    def early():
        with transaction.atomic():
            outbox.record([early_event])  # the lower id, in the older transaction
            first_written.set()
            release.wait(WAIT)

    def late():
        first_written.wait(WAIT)
        with transaction.atomic():
            outbox.record([late_event])
        second_committed.set()

    threads = [_in_thread(early), _in_thread(late)]
    assert second_committed.wait(WAIT)
    early_id, late_id = early_event.pk, late_event.pk
    assert early_id < late_id
    assert list(Event.objects.values_list("id", flat=True)) == [late_id]  # committed, visible
    seen, cursor = read_all()
    assert seen == []  # the committed event waits for the older transaction still running
    release.set()
    for t in threads:
        t.join(WAIT)
    seen, cursor = _read_until_some(cursor)
    assert seen == [f"evt_{early_id}", f"evt_{late_id}"]
    assert read_all(cursor)[0] == []


def test_it_is_not_held_back_by_a_transaction_of_another_database():
    """Transaction ids are the cluster's, but a session of another database cannot write this
    one's events: its running transaction is left out of the horizon (while one of this database
    holds the feed back, as above)."""
    import psycopg

    settings = connection.settings_dict
    other = psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        dbname="postgres",
    )
    try:
        with other.cursor() as cursor:  # a transaction holding an id, in another database
            cursor.execute("BEGIN")
            cursor.execute("SELECT pg_current_xact_id()::text::bigint")
            held = cursor.fetchone()[0]
        event = _event(3)
        with transaction.atomic():
            outbox.record([event])
        with connection.cursor() as cursor:  # the other transaction is older and still running
            cursor.execute("SELECT txid FROM events_event WHERE id = %s", [event.pk])
            assert cursor.fetchone()[0] > held
        assert read_all()[0] == [f"evt_{event.pk}"]
    finally:
        other.rollback()
        other.close()


def test_it_misses_nothing_for_a_reader_following_it_while_8_writers_commit():
    """V4: 8 writer threads commit (and some roll back) transactions of 1–3 events with random
    pauses; writer 0's first transaction writes an event, waits until writer 1 (which starts after
    that event) has committed, then writes one more, so an older transaction surely commits a
    higher id behind a younger one. A reader follows the feed all along with
    small pages. It sees every committed event exactly once, in (transaction, id) order, and
    no rolled-back one."""
    rng = random.Random(14)
    pauses = [[rng.random() * 0.004 for _ in range(TRANSACTIONS * 4)] for _ in range(WRITERS)]
    writers_done = threading.Event()
    zero_written, one_committed = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    rolled_back = []

    class Rollback(Exception):
        pass

    def writer(n):
        try:
            pause = iter(pauses[n])
            if n == 1:
                assert zero_written.wait(WAIT)
            for i in range(TRANSACTIONS):
                try:
                    with transaction.atomic():
                        for _ in range(1 + i % 3):
                            outbox.record([_event(n)])
                            time.sleep(next(pause))
                        if n == 0 and i == 0:
                            zero_written.set()
                            assert one_committed.wait(WAIT)
                            outbox.record([_event(n)])  # a higher id than writer 1's, older txid
                        if i % 7 == 6:
                            rolled_back.append(n)
                            raise Rollback
                except Rollback:
                    pass
                if n == 1 and i == 0:
                    one_committed.set()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    seen: list[str] = []

    def reader():
        cursor, deadline = None, time.monotonic() + CATCH_UP
        while True:
            page, cursor = read_all(cursor, limit=7)
            seen.extend(page)
            # Done once the writers are and every committed event has been handed out.
            if writers_done.is_set() and not page and len(seen) >= Event.objects.count():
                return
            assert time.monotonic() < deadline, "the reader did not catch up in time"
            if not page:
                time.sleep(0.005)

    read_thread = _in_thread(reader)
    writer_threads = [_in_thread(lambda n=n: writer(n)) for n in range(WRITERS)]
    for t in writer_threads:
        t.join(WAIT * 3)
    writers_done.set()
    read_thread.join(CATCH_UP + WAIT)
    assert not errors and not read_thread.is_alive()
    committed = list(Event.objects.order_by("txid", "id").values_list("id", flat=True))
    expected_count = WRITERS * sum(1 + i % 3 for i in range(TRANSACTIONS) if i % 7 != 6) + 1
    assert len(committed) == expected_count and len(rolled_back) == WRITERS * 2
    assert seen == [f"evt_{pk}" for pk in committed]  # all, once, in visibility order
    by_id = sorted(committed)
    assert by_id != committed  # an older transaction did commit behind younger ones
