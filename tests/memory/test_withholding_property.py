"""SPEC F6 as a property (Hypothesis, through the real services and database): after any
sequence of turns, replies, corrections, forgets and undos, no plan's history holds, as whole
words, a purged value in a message created at or before its forget; and an undo right after a
forget gives back the history and the message exclusions from before the forget (the erased
values stay erased, F4)."""

import itertools

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conversations.models import Message
from memory.forgetting import forget_key, tombstone_delete
from memory.mentions import mentions
from memory.models import MemoryRecord
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from turns import creation, plans, replies

pytestmark = pytest.mark.django_db

SAID = (
    "My cat is called Miso.",
    "Actually my cat is called Pixel.",
    "My dog's name is Rex.",
    "I like jazz.",
    "Miso and Rex played in the garden.",
    "Nothing new today.",
)
REPLIED = ("Pixel is sweet.", "Jazz is great.", "Okay.", "Rex barked at Miso.")
KEYS = ("cat.name", "dog.name", "user.likes")

operations = st.lists(
    st.one_of(
        st.tuples(st.just("say"), st.sampled_from(SAID)),
        st.tuples(st.just("reply"), st.sampled_from(REPLIED)),
        st.tuples(st.just("forget"), st.sampled_from(KEYS)),
        st.tuples(st.just("forget-undo"), st.sampled_from(KEYS)),
        st.tuples(st.just("undo"), st.integers(0, 5)),
    ),
    min_size=1,
    max_size=8,
)
counter = itertools.count()


def _plan(conv, n):
    """A new turn and its plan, with room for the whole conversation."""
    made = creation.turn_create(conversation_id=conv.pk, turn_key=f"probe-{n}", content="And now?")
    plan = plans.turn_prompt_plan(turn_id=made.turn.pk, budget=100_000).plan
    history = [m.id for m, _ in plan.history]
    held = sorted(
        i for kind, i, reason in plan.excluded if kind == "message" and reason == "forgotten"
    )
    return made.turn, history, held


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
@example(
    [
        ("say", "My cat is called Miso."),
        ("say", "Miso and Rex played in the garden."),
        ("reply", "Rex barked at Miso."),
        ("forget", "cat.name"),
    ]
)
@example(
    [
        ("say", "My dog's name is Rex."),
        ("reply", "Rex barked at Miso."),
        ("forget-undo", "dog.name"),
        ("say", "I like jazz."),
        ("forget", "user.likes"),
        ("undo", 1),
    ]
)
def test_it_lets_no_plan_read_a_forgotten_value_and_undo_restores_the_plan(steps):
    user = UserFactory(username=f"prop{next(counter)}")
    conv = ConversationFactory(user=user, character=CharacterFactory())
    live: dict[str, tuple[set[str], object]] = {}  # tombstone id → (purged values, forgotten_at)
    order: list[str] = []
    last_turn, replied = None, set()
    for n, (kind, arg) in enumerate(steps):
        if kind == "say":
            last_turn = creation.turn_create(
                conversation_id=conv.pk, turn_key=f"t{n}", content=arg, plan=None
            ).turn
        elif kind == "reply" and last_turn is not None and last_turn.pk not in replied:
            replies.turn_commit_reply(turn_id=last_turn.pk, content=arg)
            replied.add(last_turn.pk)
        elif kind in ("forget", "forget-undo"):
            values = set(
                MemoryRecord.objects.filter(user=user, key=arg)
                .exclude(status="forgotten")
                .values_list("value", flat=True)
            )
            if not values:
                continue
            probe, before, held_before = _plan(conv, f"{n}-before")
            tombstone = forget_key(user=user, key=arg, scope_id="*")
            live[str(tombstone.pk)] = (values, tombstone.forgotten_at)
            order.append(str(tombstone.pk))
            if kind == "forget-undo":
                tombstone_delete(tombstone_id=tombstone.pk)
                del live[str(tombstone.pk)]
                plan = plans.turn_prompt_plan(turn_id=probe.pk, budget=100_000).plan
                assert [m.id for m, _ in plan.history] == before
                assert (
                    sorted(i for k, i, r in plan.excluded if k == "message" and r == "forgotten")
                    == held_before
                )
                assert not MemoryRecord.objects.filter(
                    user=user, key=arg, value__in=values
                ).exists()
        elif kind == "undo" and order:
            tombstone_id = order[arg % len(order)]
            if tombstone_id in live:
                tombstone_delete(tombstone_id=tombstone_id)
                del live[tombstone_id]
        _, history, _ = _plan(conv, n)
        rows = Message.objects.filter(pk__in=history).values_list("pk", "created_at", "content")
        created = {str(pk): at for pk, at, _ in rows}
        texts = {str(pk): text for pk, _, text in rows}
        for values, at in live.values():
            for message_id in history:
                if created[message_id] <= at:
                    assert not any(mentions(texts[message_id], v) for v in values), (
                        texts[message_id],
                        values,
                    )
