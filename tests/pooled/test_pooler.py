"""The app behind PgBouncer in transaction pooling (`DATABASE_POOLER=pgbouncer`, config.pooler;
docs/DECISIONS.md "PgBouncer in transaction pooling"): the route through the pooler is real —
one Django connection's transactions run on several server backends — and what would break
there (prepared statements, cursors held across transactions, a session time zone) does not
break the app; a whole turn issues no statement that leaves session state behind."""

import json
import re

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from conversations.models import Message
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db(transaction=True)


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def other_client(pgbouncer, prepare_threshold=None) -> psycopg.Connection:
    """Another client of the pooler (psycopg's own default would prepare statements)."""
    return psycopg.connect(
        host=pgbouncer.host,
        port=pgbouncer.port,
        user=pgbouncer.user,
        dbname=pgbouncer.database,
        autocommit=True,
        prepare_threshold=prepare_threshold,
    )


def test_it_lets_django_reach_the_test_database_with_the_pooled_settings(pgbouncer):
    connection.ensure_connection()
    assert connection.connection.info.port == pgbouncer.port
    assert connection.connection.prepare_threshold is None
    assert connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] is True
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        assert cursor.fetchone()[0] == pgbouncer.database


def test_it_runs_a_connections_transactions_on_another_backend_while_its_own_is_busy(pgbouncer):
    """Transaction pooling, not session pooling: the backend Django's connection just used is
    taken by another client's open transaction, and Django's next statement runs elsewhere."""
    first = backend_pid()
    with other_client(pgbouncer) as other:
        other.execute("BEGIN")
        held = other.execute("SELECT pg_backend_pid()").fetchone()[0]
        assert held == first  # the idle backend went to the other client
        assert backend_pid() != first
        other.execute("COMMIT")


def test_it_breaks_prepared_statements_so_django_prepares_none(pgbouncer):
    """psycopg's default (`prepare_threshold` 5) prepares a statement run five times; on
    another backend its next run fails. Django's connection, with `prepare_threshold` None, runs
    the same sequence."""

    def sequence(run) -> None:
        for i in range(8):
            run(i)
        with other_client(pgbouncer) as other:
            other.execute("BEGIN")
            other.execute("SELECT 1")
            try:
                run(99)
            finally:
                other.execute("COMMIT")

    with (
        other_client(pgbouncer, prepare_threshold=5) as default_client,
        pytest.raises(psycopg.errors.DatabaseError, match="prepared statement"),
    ):
        sequence(lambda i: default_client.execute("SELECT %s::int", (i,)).fetchone())
    conv_messages = Message.objects.filter(seq__gte=0)
    sequence(lambda i: list(conv_messages.filter(seq=i)))


def test_it_lets_an_iterator_outside_a_transaction_read_every_row(pgbouncer, conv):
    """No server-side cursor: outside a transaction Django would declare one WITH HOLD, which
    another backend would not know at the next fetch."""
    MessageFactory.create_batch(30, conversation=conv)
    with other_client(pgbouncer) as other:
        with pytest.raises(psycopg.errors.InvalidCursorName):
            other.execute("DECLARE held CURSOR WITH HOLD FOR SELECT 1")
            blocker = other_client(pgbouncer)
            blocker.execute("BEGIN")
            blocker.execute("SELECT 1")  # takes the backend that holds the cursor
            try:
                other.execute("FETCH 1 FROM held")
            finally:
                blocker.execute("COMMIT")
                blocker.close()
    seen = []
    for message in Message.objects.filter(conversation=conv).order_by("seq").iterator(chunk_size=4):
        seen.append(message.seq)
        if len(seen) == 10:
            with other_client(pgbouncer) as other:  # a busy backend in the middle of the reading
                other.execute("BEGIN")
                other.execute("SELECT 1")
                list(Message.objects.filter(pk=message.pk))
                other.execute("COMMIT")
    assert seen == list(range(1, 31))


def test_it_keeps_the_connection_time_zone_utc_on_every_backend_it_meets(pgbouncer):
    """Django sets the connection's time zone once, at connect (`SET TIME ZONE 'UTC'` when the
    server names its zone otherwise, e.g. `Etc/UTC`). Through the pooler that session setting
    must follow the client: another client sharing the backends with another zone sees its own,
    and Django's connection reads UTC in every transaction, on whichever backend."""
    with other_client(pgbouncer) as other:
        other.execute("SET TIME ZONE 'America/New_York'")
        shared = set()
        for _ in range(12):
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('TimeZone'), pg_backend_pid()")
                zone, pid = cursor.fetchone()
            other_zone, other_pid = other.execute(
                "SELECT current_setting('TimeZone'), pg_backend_pid()"
            ).fetchone()
            assert (zone, other_zone) == ("UTC", "America/New_York")
            shared.add(pid == other_pid)
        assert True in shared  # the two clients did meet on one backend
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT now()::text LIKE '%%+00', current_setting('TimeZone')")
            assert cursor.fetchone() == (True, "UTC")


SESSION_STATE = re.compile(
    r"^\s*(SET\s+(?!LOCAL\b)|RESET\b|LISTEN\b|UNLISTEN\b|DECLARE\b|PREPARE\b|DISCARD\b"
    r"|CREATE\s+(TEMP|TEMPORARY)\b|LOCK\s+TABLE\b)|pg_advisory_lock|pg_try_advisory_lock",
    re.IGNORECASE,
)


def test_it_gets_no_statement_that_leaves_session_state_from_a_whole_turn(api, conv):
    """A turn with a plan, a correction and the replies, as the runtime sends them: every
    statement is one a pooled backend can forget when the transaction ends."""
    plan = {"budget": 2000, "capabilities": ["tone.playful"]}
    with CaptureQueriesContext(connection) as captured:
        for key, text in (
            ("a", "My dog's name is Rex."),
            ("b", "Actually, my dog's name is Max."),
            ("c", "What did we talk about?"),
        ):
            created = api.post(
                f"/api/v1/conversations/{conv.pk}/turns",
                {"turn_key": key, "content": text, "plan": plan},
                format="json",
            )
            assert created.status_code == 201, created.content
            replied = api.post(
                f"/api/v1/turns/{created.json()['id']}/reply",
                json.dumps({"content": "Noted."}),
                content_type="application/json",
            )
            assert replied.status_code == 201, replied.content
    statements = [q["sql"] for q in captured.captured_queries]
    assert statements and not [s[:80] for s in statements if SESSION_STATE.search(s)]
