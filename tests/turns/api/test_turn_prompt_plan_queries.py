"""DESIGN (constant query counts): the plan step's SQL, exactly, whatever the number of
memories and messages — for `GET /turns/{id}/prompt-plan` and for the one round trip of I7
(`POST /conversations/{id}/turns` with `plan`). Counted inside the test's transaction, so each
`transaction.atomic()` adds its SAVEPOINT and RELEASE.

Counts are of a warm process: the first request after a catalog change (each test's fixtures
make one) loads the key registry, the capabilities and the product defaults once
(config.catalog); tests/ops/test_catalog_cache.py counts that cold request."""

import pytest

from config.clock import db_now
from conversations.models import Message
from memory.models import MemorySource
from tests.factories import user_facts
from tests.helpers import ON_POSTGRES
from tests.memory.api.calls import assert_memory, forget

pytestmark = pytest.mark.django_db

NOW = "2030-01-01T00:00:00Z"

# The plan's own statements on the one turn path (turns.turn_path), SQLite and PostgreSQL
# alike: the read — the clock, the context's memory state (the user's memory version, the
# records with their sources, the tombstones, the retractions — or none of them when this
# process holds that version), the history (ids, sizes and the text the budget could admit)
# and, for capabilities, the user's rules with their version — in one statement; the write of
# the turn's snapshot. The key registry (with its pinned keys), the capabilities and the
# product defaults come from the process's catalog.
PLAN_STEP = 2
# Policy decisions for requested capabilities: their log joins the snapshot's write, one
# statement on PostgreSQL; on SQLite (one statement per table there) the log's INSERT.
DECISIONS = 0 if ON_POSTGRES else 1
AUTH = 1  # the runtime token
TURN = 1  # the GET reads the turn with its conversation, user, profile, character and message


def fill(sam, conv, n):
    """n messages (the conversation so far) and n memories, each with a source."""
    now = db_now()
    Message.objects.bulk_create(
        [
            Message(
                user=sam,
                conversation=conv,
                seq=i + 1,
                role="user" if i % 2 else "assistant",
                content=f"message {i} about the letter",
                created_at=now,
            )
            for i in range(n)
        ]
    )
    conv.last_seq = n
    conv.save()
    rows = user_facts(sam, n, value=lambda i: f"letter {i}", now=now)
    first = Message.objects.filter(conversation=conv).first()
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=first) for r in rows])


def create(api, conv, key, content, **extra):
    return api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, **extra},
        format="json",
    )


def warm(api, conv):
    """One uncounted round trip that loads every catalog read the counted requests make."""
    r = create(
        api,
        conv,
        "warm-up",
        "warming up",
        plan={"budget": 500, "capabilities": ["tone.playful"], "memory_order": "relevance"},
    )
    assert r.status_code == 201


@pytest.mark.parametrize("n", [10, 1000])
@pytest.mark.parametrize("order", ["certainty", "relevance"])
@pytest.mark.parametrize("capabilities", ["", "tone.playful"])
def test_it_gets_a_plan_in_a_constant_number_of_queries(
    api, conv, sam, n, order, capabilities, django_assert_num_queries
):
    fill(sam, conv, n)
    turn = create(api, conv, "t1", "the letter?").json()
    warm(api, conv)
    expected = AUTH + TURN + PLAN_STEP + (DECISIONS if capabilities else 0)
    with django_assert_num_queries(expected):
        r = api.get(
            f"/api/v1/turns/{turn['id']}/prompt-plan",
            {"budget": 500, "now": NOW, "memory_order": order, "capabilities": capabilities},
        )
    assert r.status_code == 200
    assert r.json()["memories"] and r.json()["history"]


def test_it_reads_a_skipped_history_past_a_message_that_does_not_fit_in_one_query(
    api, conv, sam, django_assert_num_queries
):
    """I3 `skip`: the history read holds the text of the newest messages that fit side by side;
    a message admitted after one that did not fit is read with one more query, and the plan
    carries its text as stored."""
    now = db_now()
    texts = ["old and small", "y" * 4000, "new and small"]
    Message.objects.bulk_create(
        [
            Message(
                user=sam, conversation=conv, seq=i + 1, role="user", content=text, created_at=now
            )
            for i, text in enumerate(texts)
        ]
    )
    conv.last_seq = len(texts)
    conv.save()
    turn = create(api, conv, "t1", "hi").json()
    warm(api, conv)
    with django_assert_num_queries(AUTH + TURN + PLAN_STEP + 1):
        r = api.get(
            f"/api/v1/turns/{turn['id']}/prompt-plan",
            {"budget": 300, "now": NOW, "history": "skip"},
        )
    assert [m["content"] for m in r.json()["history"]] == ["old and small", "new and small"]
    with django_assert_num_queries(AUTH + TURN + PLAN_STEP):
        r = api.get(f"/api/v1/turns/{turn['id']}/prompt-plan", {"budget": 300, "now": NOW})
    assert [m["content"] for m in r.json()["history"]] == ["new and small"]


def creation(facts: int) -> int:
    """Turn creation's own statements (tests/turns/api/test_turn_create_queries.py says
    which), with the token and the transaction's SAVEPOINT and RELEASE."""
    from tests.turns.api.test_turn_create_queries import EXPECTED, SAVEPOINTS

    return AUTH + EXPECTED[facts] + SAVEPOINTS


@pytest.mark.parametrize("n", [10, 1000])
@pytest.mark.parametrize(
    ("content", "facts"), [("how are you today", 0), ("My cat's name is Miso.", 1)]
)
def test_it_creates_a_turn_with_a_plan_in_a_constant_number_of_queries(
    api, conv, sam, n, content, facts, django_assert_num_queries
):
    """I7 and docs/DESIGN.md (the turn read once, decided in one pass, written once): the one
    round trip runs creation's statements and no more — the plan's memories, history and
    policy inputs come with creation's read, its snapshot and decision log with creation's
    write (on SQLite the decision log is one more INSERT: one statement per table there)."""
    fill(sam, conv, n)
    warm(api, conv)
    with django_assert_num_queries(creation(facts) + (0 if ON_POSTGRES else 1)):
        r = create(api, conv, "t1", content, plan={"budget": 500, "capabilities": ["tone.playful"]})
    assert r.status_code == 201
    assert len(r.json()["extracted"]) == facts and r.json()["plan"]["history"]
    assert [d["effect"] for d in r.json()["plan"]["policy"]] == ["ask"]


@pytest.mark.parametrize(
    ("content", "facts"), [("how are you today", 0), ("My cat's name is Miso.", 1)]
)
def test_it_creates_a_turn_without_a_plan_in_the_creation_queries_only(
    api, conv, sam, content, facts, django_assert_num_queries
):
    fill(sam, conv, 10)
    warm(api, conv)
    with django_assert_num_queries(creation(facts)):
        r = create(api, conv, "t1", content)
    assert r.status_code == 201 and len(r.json()["extracted"]) == facts


@pytest.mark.parametrize("n", [10, 1000])
def test_it_replays_a_create_with_a_plan_in_a_constant_number_of_queries(
    api, conv, sam, n, django_assert_num_queries
):
    """I7 replay: SAVEPOINT, the lock, the read that finds the turn by its key, the turn, its
    extracted memories for the answer with every record of their scoped keys, the tombstones
    of those keys (their E1 state now), RELEASE, then the plan (its clock comes with its
    read) — plus, on PostgreSQL, the clock read of the state's time."""
    from django.db import connection

    fill(sam, conv, n)
    create(api, conv, "t1", "My cat's name is Miso.")
    warm(api, conv)
    clock = 1 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(AUTH + 7 + clock + PLAN_STEP):
        r = create(api, conv, "t1", "My cat's name is Miso.", plan={"budget": 500})
    assert r.status_code == 200 and r.json()["plan"]["memories"]


@pytest.mark.parametrize("n", [10, 1000])
def test_it_plans_with_withheld_memories_in_the_same_number_of_queries_f7_2(
    api, conv, sam, n, django_assert_num_queries
):
    """F7.2 adds no statement to a turn: after a forget that withholds all n memories (each
    holds the forgotten word), a turn created with a plan and the GET of its plan run the
    counts above, in a process holding the state from before the forget."""
    fill(sam, conv, n)
    word = assert_memory(
        api, key="thing.word", value="letter", authority="user-confirmed", scope={"kind": "user"}
    ).json()["memory"]["id"]
    warm(api, conv)
    tombstone = forget(api, word)
    assert tombstone["withheld_memories"] == n
    with django_assert_num_queries(creation(0)):
        r = create(api, conv, "t1", "how are you today", plan={"budget": 500})
    assert r.status_code == 201
    withheld = [e for e in r.json()["plan"]["excluded"] if e["reason"] == "withheld"]
    counts = {(c["kind"], c["reason"]): c["count"] for c in r.json()["plan"]["excluded_counts"]}
    assert counts[("memory", "withheld")] == n and len(withheld) == min(n, 20)  # I9
    assert not r.json()["plan"]["memories"]
    with django_assert_num_queries(AUTH + TURN + PLAN_STEP):
        got = api.get(f"/api/v1/turns/{r.json()['id']}/prompt-plan", {"budget": 500, "now": NOW})
    assert [e for e in got.json()["excluded"] if e["reason"] == "withheld"] == withheld
