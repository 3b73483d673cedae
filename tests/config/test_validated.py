"""`config.api.validated` reuses one serializer per class and thread: what one validation
found never reaches the next, and threads never share an instance."""

import threading

import pytest
from rest_framework.exceptions import ValidationError

from config.api import validated
from turns.serializers import TurnCreateInput

GOOD = {"turn_key": "k1", "content": "My dog is called Rex.", "plan": {"budget": 2000}}


def test_it_answers_each_payload_alone_whatever_came_before():
    with pytest.raises(ValidationError) as refused:
        validated(TurnCreateInput, {"turn_key": "", "content": "x", "plan": {"budget": -1}})
    assert set(refused.value.detail) == {"turn_key", "plan"}
    first = validated(TurnCreateInput, GOOD)
    assert (first["turn_key"], first["content"]) == ("k1", "My dog is called Rex.")
    assert first["plan"]["budget"] == 2000
    second = validated(TurnCreateInput, {"turn_key": "k2", "content": "Hello."})
    assert (second["turn_key"], second["content"], second.get("plan")) == ("k2", "Hello.", None)
    assert first["turn_key"] == "k1"  # an answer is not the instance's to change later
    with pytest.raises(ValidationError) as refused:
        validated(TurnCreateInput, {"content": "x"})
    assert set(refused.value.detail) == {"turn_key"}


def test_it_gives_each_thread_its_own_instance():
    results: dict[int, list] = {}
    start = threading.Barrier(4)

    def run(n: int):
        start.wait()
        results[n] = [
            validated(TurnCreateInput, {"turn_key": f"t{n}-{i}", "content": f"m{n}"})["turn_key"]
            for i in range(200)
        ]

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: [f"t{n}-{i}" for i in range(200)] for n in range(4)}


def test_it_represents_an_answer_exactly_as_a_new_serializer_would(sam, rowan, conv):
    """`config.api.represented`: the thread's instance gives `Serializer(instance).data`."""
    from config.api import represented
    from conversations.serializers import ConversationOutput
    from tests.factories import ConversationFactory

    assert represented(ConversationOutput, conv) == ConversationOutput(conv).data
    other = ConversationFactory(user=sam, character=rowan, title="Second chat")
    assert represented(ConversationOutput, other) == ConversationOutput(other).data
    assert represented(ConversationOutput, conv)["title"] == "Rooftop greenhouse"
