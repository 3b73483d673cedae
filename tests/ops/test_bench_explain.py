"""bench/explain.py: the turn's statements under EXPLAIN (ANALYZE, BUFFERS), each explained in
a savepoint rolled back before the statement itself runs (so a write is applied once), and the
check of SPEC I9 — no node of a held turn reads as many rows as the conversation has messages
or the context has records — counting the rows a node returned and those its filters removed,
over all its loops."""

import pytest

from bench import explain
from tests.helpers import postgres_only


def _node(indent: int, node: str, rows: int | None = None, loops: int = 1) -> str:
    actual = f"(actual time=0.01..0.02 rows={rows} loops={loops})" if rows is not None else ""
    return (
        " " * indent
        + f"{node}  (cost=0.28..8.30 rows=1 width=16) "
        + (actual or "(never executed)")
    )


PLAN = "\n".join(
    [
        _node(0, "Result", 1),
        "  InitPlan 1 (returns $0)",
        _node(4, "->  Index Scan using conversations_turn_conv on conversations_turn", 0),
        "          Filter: ((turn_key)::text = '…'::text)",
        "  InitPlan 2 (returns $1)",
        _node(4, "->  Aggregate", 1),
        _node(10, "->  Bitmap Heap Scan on conversations_message conversations_message_1", 4990),
        "                Recheck Cond: (conversation_id = '…'::uuid)",
        "                Rows Removed by Filter: 10",
        _node(16, "->  Bitmap Index Scan on conversations_message_user_id_a91d73be", 5200),
        _node(2, "->  Nested Loop", 3),
        _node(8, "->  Index Scan using memory_user_scope_key on memory_memoryrecord r", 2, 40),
        "              Rows Removed by Filter: 8",
        _node(8, "->  Index Scan using conversations_message_pkey on conversations_message m"),
        "Planning Time: 0.1 ms",
        "Execution Time: 2.0 ms",
    ]
)
INDEXES = {"conversations_message_user_id_a91d73be": "conversations_message"}


def test_it_counts_the_rows_each_executed_node_reads_over_its_loops():
    found = [(n.relation, n.reads) for n in explain.nodes(PLAN, INDEXES)]
    assert found == [
        (None, 1),
        ("conversations_turn", 0),
        (None, 1),
        ("conversations_message", 5_000),  # 4,990 returned + 10 removed by the filter
        ("conversations_message", 5_200),  # the index entries of the user's every message
        (None, 3),
        ("memory_memoryrecord", 400),  # (2 + 8) × 40 loops
    ]
    # Without the index's table the bitmap index scan is a read of the index alone.
    assert explain.nodes(PLAN)[4].relation == "conversations_message_user_id_a91d73be"


def test_it_finds_a_node_reading_every_message_or_every_record_and_nothing_below():
    limits = {explain.MESSAGES: 5_000, explain.RECORDS: 400}
    assert explain.reads_everything(PLAN, limits, INDEXES) == [
        "conversations_message 5,000",
        "conversations_message 5,200",
        "memory_memoryrecord 400",
    ]
    assert explain._most(explain.reads_everything(PLAN, limits, INDEXES)) == (
        "conversations_message up to 5,200 rows in 2 nodes, memory_memoryrecord up to 400 rows "
        "in 1 node"
    )
    limits = {explain.MESSAGES: 5_201, explain.RECORDS: 401}
    assert explain.reads_everything(PLAN, limits, INDEXES) == []
    assert explain.most_read(PLAN, INDEXES) == {
        "conversations_turn": 0,
        "conversations_message": 5_200,
        "memory_memoryrecord": 400,
    }


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_it_explains_each_statement_of_two_turns_and_applies_each_write_once(api_token):
    from conversations.models import Message, Turn
    from memory.models import MemoryRecord

    cases = explain.load_cases([40], [30], seed=7)
    [case] = cases
    found = explain.explain_case(case, api_token)
    assert (found["records"], found["messages"]) == (40, 30)
    assert found["context_records"] == case.context_records > 0
    assert found["first"]["facts"] == found["held"]["facts"] == 1
    for label in ("first", "held"):
        statements = found[label]["statements"]
        assert statements and all("Execution Time" in st["plan"] for st in statements)
        assert {st["step"] for st in statements} == {"create with plan", "reply"}
    # Each turn wrote once: two user messages and two replies, two turns, one dog's name.
    assert Message.objects.filter(conversation_id=case.conversation).count() == 30 + 4
    assert Turn.objects.filter(conversation_id=case.conversation).count() == 2
    assert MemoryRecord.objects.filter(key="dog.name", value="Rex").count() == 1
    text = explain.render(found, "PostgreSQL", "python -m bench --only explain")
    assert "Rex" not in text and "green tea" not in text  # literals redacted (S1)
    assert text.count("\n== ") == 2 and "Reads everything: " in text
    held = text[text.index("The next turn") :]
    assert ("READS EVERYTHING" in held) == bool(found["everything"])
