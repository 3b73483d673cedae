"""bench/floor.py: the turn's floor replays exactly the turn — the statements Django ran for a
create with plan and its reply, in the transactions the turn opened, on a raw psycopg
connection — so the floor commits what the turn would have, and runs the same pure calls."""

import pytest

from bench import floor
from conversations.models import Message, Turn
from tests.helpers import postgres_only


def test_it_makes_the_outermost_savepoints_of_a_captured_turn_its_transactions():
    recorded = [
        ("SELECT 1", None, False),
        ('SAVEPOINT "s1_x1"', None, False),
        ("SELECT 2 FOR UPDATE", (7,), False),
        ('SAVEPOINT "s1_x2"', None, False),
        ("INSERT 3", (8,), False),
        ('RELEASE SAVEPOINT "s1_x2"', None, False),
        ('RELEASE SAVEPOINT "s1_x1"', None, False),
        ('SAVEPOINT "s1_x3"', None, False),
        ("INSERT 4", [(1,), (2,)], True),
        ('ROLLBACK TO SAVEPOINT "s1_x3"', None, False),
        ('RELEASE SAVEPOINT "s1_x3"', None, False),
    ]
    assert floor.to_program(recorded) == [
        ("SELECT 1", None, False),
        floor.BEGIN,
        ("SELECT 2 FOR UPDATE", (7,), False),
        ('SAVEPOINT "s1_x2"', None, False),
        ("INSERT 3", (8,), False),
        ('RELEASE SAVEPOINT "s1_x2"', None, False),
        floor.COMMIT,
        floor.BEGIN,
        ("INSERT 4", [(1,), (2,)], True),
        floor.ROLLBACK,
    ]
    with pytest.raises(RuntimeError, match="savepoint"):
        floor.to_program([('SAVEPOINT "s1_x1"', None, False)])


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_it_rolls_back_a_captured_turn_and_its_replay_commits_the_same_turn(conv, api_token):
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    plan = {"budget": 2000, "capabilities": ["tone.playful"]}
    captured = floor.capture(client, str(conv.pk), "f1", "My dog's name is Rex.", plan, "Noted.")
    assert not Turn.objects.filter(conversation=conv).exists()  # the capture left nothing
    steps = [s for s in captured.program if isinstance(s, str)]
    assert steps and steps.count(floor.BEGIN) == steps.count(floor.COMMIT)
    assert captured.statements == len(captured.program) - len(steps)
    assert captured.captured_queries == captured.statements + 2 * steps.count(floor.BEGIN)
    assert "decide_turn" in {fn.__name__ for fn, *_ in captured.pure}

    conn = floor.raw_connection()
    timings: dict = {}
    try:
        floor.replay_sql(conn, captured.program, timings)
    finally:
        conn.close()
    assert set(timings) == {floor.label(step) for step in captured.program}
    assert len(timings[floor.BEGIN]) == len(timings[floor.COMMIT]) == steps.count(floor.BEGIN)
    assert not [name for name in timings if "Rex" in name]  # statement text only, no values
    turn = Turn.objects.get(conversation=conv, turn_key="f1")
    assert turn.status == "replied"
    assert list(
        Message.objects.filter(conversation=conv).order_by("seq").values_list("role", "content")
    ) == [("user", "My dog's name is Rex."), ("assistant", "Noted.")]
    floor.replay_pure(captured.pure)  # the same calls on the same inputs run again
