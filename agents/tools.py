"""The MCP tools (SPEC §15 M3): each a thin adapter over the service or selector the API's view
calls, with the answer shaped as the API shapes it. A tool receives the connection's `Call`
— its user, its characters, its access — never a user from its arguments, so nothing of
another user can be named: another user's memory, conversation or character scope answers the
same `not_found` as an id that does not exist."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from config.api import represented
from config.clock import db_now
from config.errors import DomainError, NotFound, ValidationError
from conversations.scopes import Scope
from conversations.selectors import character_by_slug, conversation_of_user, load_context
from memory import asking, forgetting, services
from memory.selectors.states import memory_list, memory_stated
from memory.serializers import (
    ACTIVE,
    TombstoneOutput,
    assert_json,
    listed_memory_json,
    memory_json,
)
from memory.switches import memory_settings_of
from policy.serializers import DecisionOutput
from policy.services import decision_make

from . import schemas as s
from .selectors import Call, recalled, requester_of

RECALL_DEFAULT = 20
RECALL_MAX = 100
LIST_MAX = 500


class MemoryOff(DomainError):
    """I8: the user switched memory use off; reads of what is remembered answer this."""

    code = "memory_off"


@dataclass(frozen=True)
class Tool:
    name: str
    access: str  # read | write | forget
    description: str
    input_schema: dict
    output_schema: dict
    run: Callable[[Call, dict], dict]


# ---------------------------------------------------------------------------------------------
# What a connection may reach


def _character(call: Call, slug: str | None) -> str | None:
    """A character the connection may act for, or not found (unknown or not granted alike)."""
    if slug is None:
        return None
    if call.slugs is not None and slug not in call.slugs:
        raise NotFound("No such character.")
    try:
        return character_by_slug(slug).slug
    except ValidationError:
        raise NotFound("No such character.") from None


def _conversation(call: Call, conversation_id: str | None):
    if conversation_id is None:
        return None
    try:
        conversation = conversation_of_user(call.user, conversation_id)
    except ValidationError:
        raise NotFound("No such conversation.") from None
    if call.slugs is not None and conversation.character.slug not in call.slugs:
        raise NotFound("No such conversation.")
    return conversation


def _reaches(call: Call, scope: Scope) -> bool:
    """A connection for some characters reaches the user scope and theirs."""
    if call.slugs is None or scope.kind == "user":
        return True
    if scope.kind == "character":
        return scope.character in call.slugs
    return str(scope.conversation) in call.conversations()


def _memory(call: Call, memory_id: str):
    found = memory_stated(memory_id, now=db_now(), user=call.user)
    if not _reaches(call, found.record.scope):
        raise NotFound("No such memory.")
    return found


def _context(call: Call, *, character=None, conversation=None, scene=None):
    conv = _conversation(call, conversation)
    slug = _character(call, character)
    data = {"user": call.user.username}
    if slug:
        data["character"] = slug
    if conv is not None:
        data["conversation"] = str(conv.pk)
        if slug and conv.character.slug != slug:
            raise ValidationError(
                "The conversation is with another character.", field="conversation"
            )
    if scene is not None:
        if conv is None:
            raise ValidationError("A scene needs a conversation.", field="scene")
        data["scene"] = scene
    return load_context(data)


def _use_on(call: Call) -> None:
    if not memory_settings_of(call.user).use:
        raise MemoryOff("The user switched memory use off: nothing remembered is used now.")


# ---------------------------------------------------------------------------------------------
# read


def recall(call: Call, args: dict) -> dict:
    _use_on(call)
    ctx = _context(call, character=args.get("character"), conversation=args.get("conversation"))
    found = recalled(ctx, args.get("query") or "", args.get("limit", RECALL_DEFAULT))
    return {
        "memories": [
            {
                "id": memory.record.id,
                "key": memory.key,
                "label": memory.label,
                "value": memory.value,
                "certainty": memory.certainty,
            }
            for memory in found
        ]
    }


def list_memories(call: Call, args: dict) -> dict:
    _use_on(call)
    listed = memory_list(
        call.user,
        key=args.get("key"),
        state=args.get("state"),
        include_withheld=args.get("include_withheld", False),
        now=db_now(),
    )
    found = [m for m in listed if _reaches(call, m.record.scope)]
    return {
        "count": len(found),
        "memories": [listed_memory_json(m) for m in found[:LIST_MAX]],
    }


def ask(call: Call, args: dict) -> dict:
    _use_on(call)
    asked = asking.ask(call.user, args["question"])
    return {
        "answer": asked.answer,
        "understood": asked.understood,
        "memory": memory_json(asked.record, ACTIVE) if asked.record else None,
    }


def decide(call: Call, args: dict) -> dict:
    ctx = _context(
        call,
        character=args["character"],
        conversation=args.get("conversation"),
        scene=args.get("scene"),
    )
    outcome = decision_make(
        context=ctx,
        capability=args["capability"],
        requested_by="assistant",
        requester=requester_of(call.connection),
    )
    return dict(represented(DecisionOutput, outcome))


# ---------------------------------------------------------------------------------------------
# write


def remember(call: Call, args: dict) -> dict:
    ctx = _context(call, character=args.get("character"))
    if not memory_settings_of(call.user).learn:
        return {"extracted": [], "learning": False}
    results = services.memory_remember(ctx=ctx, text=args["text"], agent=call.provenance)
    return {"extracted": [assert_json(r) for r in results], "learning": True}


def save(call: Call, args: dict) -> dict:
    slug = _character(call, args.get("character"))
    scope = Scope("character", character=slug) if slug else Scope("user")
    result = services.memory_assert(
        user=call.user,
        key=args["key"],
        value=args["value"],
        scope=scope,
        authority="model-inferred",
        agent=call.provenance,
    )
    return assert_json(result)


def correct(call: Call, args: dict) -> dict:
    record = _memory(call, args["memory"]).record
    result = services.memory_assert(
        user=call.user,
        key=record.key,
        value=args["value"],
        scope=record.scope,
        authority="model-inferred",
        supersedes=record.id,
        agent=call.provenance,
    )
    return assert_json(result)


# ---------------------------------------------------------------------------------------------
# forget


def forget(call: Call, args: dict) -> dict:
    record = _memory(call, args["memory"]).record
    tombstone = forgetting.memory_forget(
        record_id=record.id, user=call.user, everywhere=args.get("everywhere", False)
    )
    return dict(represented(TombstoneOutput, tombstone))


# ---------------------------------------------------------------------------------------------
# The list a client sees

_CHARACTER = s.described(s.SLUG, "A character's slug: what is remembered for that character.")
_CONVERSATION = s.described(s.UUID, "A conversation's id: what applies in that conversation.")
_MEMORY_ID = s.described(s.UUID, "The id of a memory, as recall or list_memories gave it.")

TOOLS = (
    Tool(
        "recall",
        "read",
        "Find what the companion remembers about the user that could be used now, most "
        "relevant to the query first. Give a character or a conversation to see what "
        "applies there. Forgotten things are never answered.",
        s.obj(
            {
                "query": s.described(s.TEXT, "Words to rank the memories by."),
                "character": _CHARACTER,
                "conversation": _CONVERSATION,
                "limit": {"type": "integer", "minimum": 1, "maximum": RECALL_MAX},
            }
        ),
        s.obj({"memories": {"type": "array", "items": s.RECALLED}}, ["memories"]),
        recall,
    ),
    Tool(
        "list_memories",
        "read",
        "List the user's memories as their memories page does, each with its state "
        "(active, superseded, forgotten…), optionally only one key or one state. A memory "
        "the companion stopped using because the user forgot a word it holds is left out, "
        "unless `include_withheld` is true: then it has no value and its key is masked.",
        s.obj(
            {
                "state": {"type": "string", "enum": s.STATES},
                "key": s.described(s.SLUG, "A memory key, such as pet.name."),
                "include_withheld": {"type": "boolean"},
            }
        ),
        s.obj(
            {"count": {"type": "integer"}, "memories": {"type": "array", "items": s.MEMORY}},
            ["count", "memories"],
        ),
        list_memories,
    ),
    Tool(
        "ask",
        "read",
        "Ask a simple question about the user in words, such as “Where do I work?” or "
        "“What is my dog called?”. `understood` says whether the question was recognised.",
        s.obj({"question": s.described(s.TEXT, "The question.")}, ["question"]),
        {
            "type": "object",
            "properties": {
                "answer": s.NULLABLE_STRING,
                "understood": {"type": "boolean"},
                "memory": {"anyOf": [s.MEMORY, {"type": "null"}]},
            },
            "required": ["answer", "understood", "memory"],
        },
        ask,
    ),
    Tool(
        "decide",
        "read",
        "Ask whether the companion may use a capability (such as media.image) with a "
        "character, before generating anything: allow, deny, or ask the user first.",
        s.obj(
            {
                "capability": s.described(s.SLUG, "The capability's name."),
                "character": _CHARACTER,
                "conversation": _CONVERSATION,
                "scene": s.described(s.SLUG, "A scene of the conversation."),
            },
            ["capability", "character"],
        ),
        {
            "type": "object",
            "properties": {
                "decision_id": {"type": "string"},
                "effect": {"type": "string", "enum": ["allow", "deny", "ask"]},
                "reason": {"type": "string"},
            },
            "required": ["decision_id", "effect", "reason"],
        },
        decide,
    ),
    Tool(
        "remember",
        "write",
        "Tell the companion what a text says about the user (“My cat is called Miso”). "
        "It is remembered as inferred by an assistant: it never overrules what the user "
        "said or corrected, and never brings back what the user made it forget.",
        s.obj({"text": s.described(s.TEXT, "The text."), "character": _CHARACTER}, ["text"]),
        s.obj(
            {
                "extracted": {"type": "array", "items": s.WRITE_RESULT},
                "learning": {"type": "boolean"},
            },
            ["extracted", "learning"],
        ),
        remember,
    ),
    Tool(
        "save",
        "write",
        "Remember one fact about the user under a key (such as pet.name), for everyone "
        "or for one character. Refused when the user made the companion forget it.",
        s.obj(
            {
                "key": s.described(s.SLUG, "The memory key, such as pet.name."),
                "value": s.described(s.TEXT, "The value."),
                "character": _CHARACTER,
            },
            ["key", "value"],
        ),
        s.WRITE_RESULT,
        save,
    ),
    Tool(
        "correct",
        "write",
        "Replace a memory's value with a new one. A value the user gave or confirmed "
        "cannot be replaced by an assistant.",
        s.obj(
            {"memory": _MEMORY_ID, "value": s.described(s.TEXT, "The new value.")},
            ["memory", "value"],
        ),
        s.WRITE_RESULT,
        correct,
    ),
    Tool(
        "forget",
        "forget",
        "Make the companion forget a memory: its value is erased and not learnt again. "
        "`everywhere` forgets the key for every character. Only the user can undo it. "
        "Answers the forget with how many messages and other memories it withholds.",
        s.obj({"memory": _MEMORY_ID, "everywhere": {"type": "boolean"}}, ["memory"]),
        s.TOMBSTONE,
        forget,
    ),
)
BY_NAME = {t.name: t for t in TOOLS}
