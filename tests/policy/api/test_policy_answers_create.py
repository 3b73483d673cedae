"""`POST /policy/answers` (SPEC D8, §10): an answer remembered for a place creates a rule, a
replay is 200 and a different answer 409, bad answers name the field."""

import uuid

import pytest

from tests.factories import ConversationFactory
from tests.helpers import assert_problem
from tests.policy.api.calls import (
    answer,
    decide,
)

pytestmark = pytest.mark.django_db


def test_it_creates_a_rule_for_an_answer_remembered_for_the_conversation_d8(api, ctx, conversation):
    asked = decide(api, ctx).json()
    response = answer(api, asked["decision_id"], remember="conversation")
    assert response.status_code == 200
    body = response.json()
    assert (body["effect"], body["replayed"], body["media_job"]) == ("allow", False, None)
    assert body["rule"]["scope"] == {"kind": "conversation", "conversation": str(conversation.pk)}
    assert body["rule"]["source"] == "explicit-user"
    assert body["policy_version"] == {"defaults": 0, "user": 1}
    assert decide(api, ctx).json()["effect"] == "allow"
    other = ConversationFactory(user=conversation.user, character=conversation.character)
    assert decide(api, {**ctx, "conversation": str(other.pk)}).json()["effect"] == "ask"


def test_it_answers_400_to_a_scene_answer_without_a_scene_d8(api, ctx):
    asked = decide(api, ctx).json()
    assert_problem(
        answer(api, asked["decision_id"], remember="scene"), 400, "validation_error", "remember"
    )


def test_it_answers_200_to_a_replayed_answer_and_409_to_a_different_one_d8(api, ctx):
    asked = decide(api, ctx).json()
    answer(api, asked["decision_id"], remember="global")
    again = answer(api, asked["decision_id"], remember="global")
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert_problem(
        answer(api, asked["decision_id"], answer="deny", remember="global"), 409, "conflict"
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ({"decision_id": str(uuid.uuid4()), "answer": "allow", "remember": "once"}, "decision_id"),
        ({"decision_id": "nope", "answer": "allow", "remember": "once"}, "decision_id"),
        ({"decision_id": str(uuid.uuid4()), "answer": "ask", "remember": "once"}, "answer"),
        ({"decision_id": str(uuid.uuid4()), "answer": "allow", "remember": "forever"}, "remember"),
        ({"answer": "allow", "remember": "once"}, "decision_id"),
    ],
)
def test_it_refuses_bad_answers_naming_the_field_d8(api, capabilities, body, field):
    assert_problem(
        api.post("/api/v1/policy/answers", body, format="json"), 400, "validation_error", field
    )
