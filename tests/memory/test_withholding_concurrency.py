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
