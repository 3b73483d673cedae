"""The chat runtime's loop through a client generated from the API's schema (SPEC §10):
a user, a character, a conversation, a turn planned in the same request, the reply, the
conversation's last 20 messages read back (C4), a correction, a forget, a boundary decision,
the answer to its ASK, and the export.

Generate the client next to this file first (see the README):

    openapi-python-client generate --url http://127.0.0.1:8000/api/schema/?format=json \
        --meta none --output-path companion_client --config config.yml

`mypy --strict` checks this file together with the generated package."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from companion_client import AuthenticatedClient
from companion_client.api.conversations_and_turns import (
    conversation_create,
    conversation_get,
    conversation_messages,
    turn_create,
    turn_reply,
)
from companion_client.api.forgetting import memory_forget
from companion_client.api.memories import memory_correct
from companion_client.api.policy import policy_answers_create, policy_decide
from companion_client.api.users_and_characters import character_put, user_export, user_put
from companion_client.models import (
    AssertOutput,
    CharacterOutput,
    CharacterPutInputRequest,
    ContextInputRequestType2,
    ConversationCreateInputRequest,
    ConversationOutput,
    DecisionOutput,
    MemoryCorrectInputRequest,
    MemoryForgetInputRequest,
    MessagePageOutput,
    PlanParamsInputRequest,
    PolicyAnswerInputRequest,
    PolicyAnswerOutput,
    PolicyDecideInputRequest,
    Problem,
    Snapshot,
    TombstoneOutput,
    TurnCreateInputRequest,
    TurnCreateOutput,
    TurnReplyInputRequest,
    TurnReplyOutput,
    UserPutInputRequest,
)
from companion_client.types import Response


class ApiProblem(Exception):
    """A problem answer (RFC 9457) where the loop expected success."""

    def __init__(self, status: int, problem: Problem | None) -> None:
        code = problem.code if problem is not None else "?"
        super().__init__(f"{status} {code}")
        self.status = status
        self.problem = problem


T = TypeVar("T")


def ok(response: Response[T | Problem], *statuses: int) -> T:
    """The parsed body of a successful answer; a problem raises `ApiProblem`."""
    parsed = response.parsed
    if response.status_code not in statuses or parsed is None or isinstance(parsed, Problem):
        raise ApiProblem(response.status_code, parsed if isinstance(parsed, Problem) else None)
    return parsed


@dataclass
class Loop:
    """What one pass of the loop saw, step by step."""

    statuses: dict[str, int] = field(default_factory=dict)
    # A memory's value is null while a forget withholds it (F7.2).
    remembered: str | None = ""
    corrected: str | None = ""
    effect: str = ""
    answered: str = ""
    export_format: str = ""
    plan_hash: str = ""
    last_messages: list[tuple[str, str | None, bool]] = field(default_factory=list)
    forgotten_scope: str = ""


def run(base_url: str, token: str, user: str, slug: str) -> Loop:
    seen = Loop()
    client = AuthenticatedClient(base_url=base_url, token=token)
    with client as c:
        r_user = user_put.sync_detailed(user, client=c, body=UserPutInputRequest())
        ok(r_user, 200, 201)
        seen.statuses["user_put"] = r_user.status_code
        r_char = character_put.sync_detailed(
            slug, client=c, body=CharacterPutInputRequest(name="Captain Rowan")
        )
        character: CharacterOutput = ok(r_char, 200, 201)
        seen.statuses["character_put"] = r_char.status_code
        r_conv = conversation_create.sync_detailed(
            client=c, body=ConversationCreateInputRequest(user=user, character=character.slug)
        )
        conversation: ConversationOutput = ok(r_conv, 201)
        seen.statuses["conversation_create"] = r_conv.status_code

        r_turn = turn_create.sync_detailed(
            conversation.id,
            client=c,
            body=TurnCreateInputRequest(
                turn_key="turn-1",
                content="My cat's name is Miso.",
                plan=PlanParamsInputRequest(budget=800, capabilities=["tone.playful"]),
            ),
        )
        turn: TurnCreateOutput = ok(r_turn, 201)
        seen.statuses["turn_create"] = r_turn.status_code
        memory = turn.extracted[0].memory
        assert memory is not None
        seen.remembered = memory.value
        if turn.plan:
            seen.plan_hash = turn.plan.plan_hash

        r_reply = turn_reply.sync_detailed(
            turn.id, client=c, body=TurnReplyInputRequest(content="Miso is a lovely name.")
        )
        reply: TurnReplyOutput = ok(r_reply, 201)
        seen.statuses["turn_reply"] = r_reply.status_code
        assert not reply.replayed

        # C4: read the conversation's last 20 messages back (messages are numbered 1, 2, 3…).
        r_read = conversation_get.sync_detailed(conversation.id, client=c)
        last_seq = ok(r_read, 200).last_seq
        seen.statuses["conversation_get"] = r_read.status_code
        r_messages = conversation_messages.sync_detailed(
            conversation.id, client=c, after_seq=max(0, last_seq - 20), limit=20
        )
        page: MessagePageOutput = ok(r_messages, 200)
        seen.statuses["conversation_messages"] = r_messages.status_code
        seen.last_messages = [(m.role, m.content, m.withheld) for m in page.results]

        r_correct = memory_correct.sync_detailed(
            memory.id, client=c, body=MemoryCorrectInputRequest(value="Mochi")
        )
        corrected: AssertOutput = ok(r_correct, 200, 201)
        seen.statuses["memory_correct"] = r_correct.status_code
        assert corrected.memory
        seen.corrected = corrected.memory.value

        r_forget = memory_forget.sync_detailed(
            corrected.memory.id, client=c, body=MemoryForgetInputRequest()
        )
        tombstone: TombstoneOutput = ok(r_forget, 200)
        seen.statuses["memory_forget"] = r_forget.status_code
        assert tombstone.key == memory.key
        seen.forgotten_scope = tombstone.scope.kind

        context = ContextInputRequestType2(user=user, conversation=conversation.id)
        r_decide = policy_decide.sync_detailed(
            client=c,
            body=PolicyDecideInputRequest(
                context=context, capability="media.voice", requested_by="user"
            ),
        )
        decision: DecisionOutput = ok(r_decide, 200)
        seen.statuses["policy_decide"] = r_decide.status_code
        seen.effect = decision.effect

        r_answer = policy_answers_create.sync_detailed(
            client=c,
            body=PolicyAnswerInputRequest(
                decision_id=decision.decision_id, answer="allow", remember="once"
            ),
        )
        answered: PolicyAnswerOutput = ok(r_answer, 200)
        seen.statuses["policy_answers_create"] = r_answer.status_code
        seen.answered = answered.effect

        r_export = user_export.sync_detailed(user, client=c)
        exported: Snapshot = ok(r_export, 200)
        seen.statuses["user_export"] = r_export.status_code
        seen.export_format = exported.format_
    return seen
