"""Turn creation's SQL (docs/DESIGN.md: constant query counts; the turn read once and written
once): exact statements for the service and the endpoint with 0, 1 and 3 extracted facts, the
same whether the user has 10 or 500 stored memories.

The service runs: the conversation with its user, character and memory profile (locking the
conversation and the profile), one read after the locks (clock, turn key, the extractor's
"it", the context's memory state, and here the key registry: no request's catalog cache),
and then every write — seq, message, records, source links, their events (V1), turn — as one
statement on PostgreSQL (one per table on SQLite); no memory version is read back after
it (the process keeps what it wrote at the version it read). Its transaction adds BEGIN and
COMMIT (a savepoint and its release inside a test's transaction): three statements and those
two on PostgreSQL."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.clock import db_now
from memory.models import MemoryRecord, MemorySource
from memory.services import ensure_profile
from tests.factories import (
    CharacterFactory,
    ConversationFactory,
    MessageFactory,
    UserFactory,
    user_facts,
)
from tests.helpers import ON_POSTGRES, postgres_only
from turns.creation import turn_create

MESSAGES = {
    0: "Hello there, how are you today?",
    1: "My dog's name is Rex.",
    3: "I like jazz. I live in Lisbon. My dog's name is Rex.",
}
# Statements of the service itself, outside any enclosing transaction.
EXPECTED = {
    0: 3 if ON_POSTGRES else 5,  # lock, the read, the writes (seq, message, turn)
    # records, sources and their events (V1) join the writes, and no version is read back:
    # the state they left is kept at the version read once they commit (memory.state)
    1: 3 if ON_POSTGRES else 8,
    3: 3 if ON_POSTGRES else 8,  # the same: one batch
}
SAVEPOINTS = 2


def _world(n: int):
    user = UserFactory(username="counted")
    ensure_profile(user)
    conv = ConversationFactory(user=user, character=CharacterFactory(slug="rowan"))
    first = MessageFactory(conversation=conv)
    now = db_now()
    rows = user_facts(user, n, now=now) + MemoryRecord.objects.bulk_create(
        [
            # Many stored values of the many key the message writes to: its whole scoped key is
            # read.
            MemoryRecord(
                user=user,
                key="user.likes",
                value=f"like {i}",
                scope_kind="user",
                scope_id="user:counted",
                valid_from=now,
                recorded_at=now,
                evidence_time=now,
                version=i + 1,
                authority="rule-extracted",
            )
            for i in range(n)
        ]
    )
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=first) for r in rows])
    return conv


@pytest.mark.django_db
@pytest.mark.parametrize("stored", [10, 500])
@pytest.mark.parametrize("facts", [0, 1, 3])
def test_it_runs_a_fixed_number_of_statements_in_the_service(stored, facts):
    conv = _world(stored)
    with CaptureQueriesContext(connection) as captured:
        result = turn_create(conversation_id=conv.pk, turn_key="t1", content=MESSAGES[facts])
    assert result.created and len(result.turn.extracted) == facts
    assert [e["outcome"] for e in result.turn.extracted] == ["created"] * facts
    assert len(captured) == EXPECTED[facts] + SAVEPOINTS, [
        q["sql"][:90] for q in captured.captured_queries
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("stored", [10, 500])
@pytest.mark.parametrize("facts", [0, 1, 3])
def test_it_adds_only_the_token_at_the_endpoint(api, stored, facts, django_assert_num_queries):
    conv = _world(stored)
    with django_assert_num_queries(1 + EXPECTED[facts] + SAVEPOINTS):
        r = api.post(
            f"/api/v1/conversations/{conv.pk}/turns",
            {"turn_key": "t1", "content": MESSAGES[facts]},
            format="json",
        )
    assert r.status_code == 201
    body = r.json()
    assert len(body["extracted"]) == facts
    # The answer shows the records as stored, without reading them again.
    for item in body["extracted"]:
        stored_now = api.get(f"/api/v1/memories/{item['memory']['id']}").json()
        assert item["memory"] == stored_now


@pytest.mark.django_db
def test_it_reads_the_stored_turn_on_a_replay(api):
    """I4: a retry finds the turn in the read after the locks and loads it (one more query)."""
    conv = _world(10)
    body = {"turn_key": "t1", "content": MESSAGES[1]}
    first = api.post(f"/api/v1/conversations/{conv.pk}/turns", body, format="json").json()
    with CaptureQueriesContext(connection) as captured:
        again = api.post(f"/api/v1/conversations/{conv.pk}/turns", body, format="json")
    assert again.status_code == 200 and again.json() == first
    # token, savepoint, lock, reads, the turn, its memories with their sources and every record
    # of their scoped keys, the tombstones of those keys (E1: their state now), release — and
    # on PostgreSQL the clock read of that state's time
    assert len(captured) == 8 + (connection.vendor == "postgresql")


@postgres_only  # (a transactional test flushes the seeded key templates the page tests read)
@pytest.mark.django_db(transaction=True)
def test_it_runs_six_statements_for_one_fact_in_a_real_request_on_postgresql():
    """Outside a test's transaction turn creation's atomic block is the transaction itself:
    BEGIN, the four statements, COMMIT; no savepoint."""
    conv = _world(10)
    with CaptureQueriesContext(connection) as captured:
        result = turn_create(conversation_id=conv.pk, turn_key="t1", content=MESSAGES[1])
    assert [e["outcome"] for e in result.turn.extracted] == ["created"]
    sql = [q["sql"] for q in captured.captured_queries]
    assert len(sql) == EXPECTED[1] + 2, sql
    assert sql[0].startswith("BEGIN") and sql[-1] == "COMMIT"
    assert not [q for q in sql if "SAVEPOINT" in q]
