"""SPEC F6 part 3, proven with real threads on PostgreSQL: a reply racing a forget ends
withheld exactly when F6 says so, whichever commits first. The reply's turn was planned with
the record the forget purges and the reply's words mention nothing, so only part 3 can
withhold it: it must be withheld when it committed after `forgotten_at`, and only then."""

import time

import pytest

from conversations.models import Message
from memory.forgetting import forget_key
from memory.models import Tombstone
from memory.withholding import withheld_message_ids
from tests.concurrency import run_concurrently
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from tests.helpers import postgres_only
from turns import creation, replies
from turns.planner import PlanParams

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]

ROUNDS = 12


def test_it_withholds_a_reply_racing_a_forget_whenever_f6_says_so():
    character = CharacterFactory(slug="rowan")
    outcomes = []
    for round_ in range(ROUNDS):
        user = UserFactory(username=f"racer{round_}")
        conv = ConversationFactory(user=user, character=character)
        creation.turn_create(
            conversation_id=conv.pk, turn_key="t1", content="My cat is called Miso."
        )
        planned = creation.turn_create(
            conversation_id=conv.pk, turn_key="t2", content="Tell me.", plan=PlanParams(budget=4000)
        )
        assert [pm.value for pm in planned.plan.plan.memories] == ["Miso"]
        # Released together; by turns the forget, the reply or neither gets a head start.
        head = (0.05, 0.0, 0.0)[round_ % 3], (0.0, 0.05, 0.0)[round_ % 3]

        def act(i, turn_id=planned.turn.pk, user=user, head=head):
            time.sleep(head[1 - i])
            if i == 0:
                return forget_key(user=user, key="cat.name", scope_id="*")
            return replies.turn_commit_reply(turn_id=turn_id, content="I see.").message

        results = run_concurrently(act, 2)
        assert all(kind == "ok" for kind, _ in results), results
        tombstone = Tombstone.objects.get(user=user)
        reply = Message.objects.get(pk=results[1][1].pk)
        committed_after = reply.created_at > tombstone.forgotten_at
        withheld = str(reply.pk) in withheld_message_ids(user=user, message_ids=[reply.pk])
        assert withheld == committed_after, (round_, reply.created_at, tombstone.forgotten_at)
        outcomes.append(withheld)
    # Both orders are met over the rounds.
    assert set(outcomes) == {True, False}, outcomes


def test_it_lets_no_interleaving_of_a_forget_a_plan_and_a_reply_send_the_word():
    """SPEC F7.1, with threads on PostgreSQL: a forget, a plan read of an open turn whose
    message mentions the value, and the reply to that turn, released together. Every plan
    answered was read before the forget committed (a plan started after the forget's commit
    returned is a 409 `message_withheld`); every reply committed after `forgotten_at` is
    withheld, one committed before is not (its words mention nothing forgotten, so only F7.1
    can withhold it); and the reply's answer says what is stored (`withheld`)."""
    from config.errors import MessageWithheld
    from turns.plans import turn_prompt_plan

    character = CharacterFactory(slug="rowan")
    plans, replies_seen = [], []
    for round_ in range(ROUNDS):
        user = UserFactory(username=f"asker{round_}")
        conv = ConversationFactory(user=user, character=character)
        creation.turn_create(
            conversation_id=conv.pk, turn_key="t1", content="My cat is called Miso."
        )
        asked = creation.turn_create(
            conversation_id=conv.pk, turn_key="t2", content="Miso chased a moth today."
        ).turn
        # Released together; by turns the forget, the readers or no one gets a head start.
        forget_head, reader_head = [(0.3, 0.0), (0.0, 0.3), (0.0, 0.0)][round_ % 3]
        marks = {}

        def act(i, turn_id=asked.pk, user=user, marks=marks, heads=(forget_head, reader_head)):
            time.sleep(heads[0] if i == 0 else heads[1])
            if i == 0:
                tombstone = forget_key(user=user, key="cat.name", scope_id="*")
                marks["committed"] = time.monotonic()
                return tombstone
            if i == 1:
                marks["planned"] = time.monotonic()
                try:
                    return turn_prompt_plan(turn_id=turn_id, budget=4000).plan
                except MessageWithheld as refused:
                    return refused
            return replies.turn_commit_reply(turn_id=turn_id, content="What a hunter.")

        results = run_concurrently(act, 3)
        assert all(kind == "ok" for kind, _ in results), results
        tombstone = Tombstone.objects.get(user=user)
        planned = results[1][1]
        if isinstance(planned, MessageWithheld):
            assert planned.extra == {"turn": str(asked.pk)}
        else:
            assert planned.current.content == "Miso chased a moth today."
            assert marks["planned"] < marks["committed"], round_
        plans.append(isinstance(planned, MessageWithheld))
        answered = results[2][1]
        reply = Message.objects.get(pk=answered.message.pk)
        committed_after = reply.created_at > tombstone.forgotten_at
        withheld = str(reply.pk) in withheld_message_ids(user=user, message_ids=[reply.pk])
        assert withheld == committed_after == answered.withheld, (round_, answered.withheld)
        replies_seen.append(withheld)
    # The refusals and the plans, the withheld replies and the others are all met.
    assert set(plans) == {True, False}, plans
    assert set(replies_seen) == {True, False}, replies_seen


def test_it_answers_withheld_a_reply_that_waited_for_a_forget_to_commit():
    """SPEC F7.1 and F7.5, the interleaving the reply's one statement cannot see by itself: the
    reply starts while a forget holds the memory write lock, so its snapshot predates the
    forget's commit. The statement reads the user's memory version as its snapshot saw it
    and once the lock is taken; they differ, so the holds are read again (one statement
    more) and the answer says `withheld`, as stored."""
    import threading

    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    user = UserFactory(username="waiter")
    conv = ConversationFactory(user=user, character=CharacterFactory(slug="rowan"))
    creation.turn_create(conversation_id=conv.pk, turn_key="t1", content="My cat is called Miso.")
    asked = creation.turn_create(
        conversation_id=conv.pk, turn_key="t2", content="Miso chased a moth today."
    ).turn
    forgotten, release = threading.Event(), threading.Event()

    def act(i):
        if i == 0:
            with transaction.atomic():
                tombstone = forget_key(user=user, key="cat.name", scope_id="*")
                forgotten.set()
                assert release.wait(10)
            return tombstone
        assert forgotten.wait(10)
        with CaptureQueriesContext(connection) as captured:
            answered = replies.turn_commit_reply(turn_id=asked.pk, content="What a hunter.")
        return answered, len(captured)

    def released(i):
        if i == 2:  # the reply has had time to start and wait for the lock
            assert forgotten.wait(10)
            time.sleep(0.5)
            release.set()
            return None
        return act(i)

    results = run_concurrently(released, 3)
    assert all(kind == "ok" for kind, _ in results), results
    tombstone, (answered, statements) = results[0][1], results[1][1]
    reply = Message.objects.get(pk=answered.message.pk)
    assert reply.created_at > tombstone.forgotten_at
    assert str(reply.pk) in withheld_message_ids(user=user, message_ids=[reply.pk])
    assert answered.withheld is True
    assert statements == 2
