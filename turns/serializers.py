"""The turn API's shapes and answers (SPEC §10, I7, E1, C4): the input and output shapes of
the export, import, message and turn operations, a turn with its extraction outcomes, a
prompt plan's body, and the plan parameters of a request. The user, character and
conversation shapes are `conversations.serializers`."""

from __future__ import annotations

from rest_framework import serializers

from config.api import PageOutput, represented
from config.clock import db_now
from config.serializers import (
    SCENE_MAX,
    BoundedIntegerField,
    CleanCharField,
    PageQuery,
    StrictSerializer,
)
from conversations.models import Turn
from memory.domain import RESOLVER_VERSION
from memory.selectors.states import memory_stated_many
from memory.serializers import (
    ExtractedOutput,
    ProjectedOutput,
    memory_json,
    withheld_memory_json,
)
from policy.serializers import DecisionOutput

from .plan_shapes import plan_body
from .planner import PlanParams


def plan_params(params: dict | None) -> PlanParams | None:
    """The planner's parameters of a validated `plan` object (I7); None without one. A
    capability named twice is asked once."""
    if params is None:
        return None
    return PlanParams(
        budget=params["budget"],
        memory_share=params["memory_share"],
        history=params["history"],
        capabilities=tuple(dict.fromkeys(params["capabilities"])),
        memory_order=params["memory_order"],
    )


def _memory_json(record, state) -> dict:
    """A memory as a turn shows it: masked while a forget withholds it (F7.2)."""
    return (withheld_memory_json if record.withheld_by else memory_json)(record, state)


def turn_json(turn: Turn) -> dict:
    """The turn with its extraction outcomes; memories are shown as they are now (a forget
    since then shows the erased skeleton). A turn just created carries the records its writes
    produced (`extracted_records`, exactly what a read would give), so nothing is read again."""
    ids = [e["memory"] for e in turn.extracted if e.get("memory")]
    records = getattr(turn, "extracted_records", None)
    states = getattr(turn, "extracted_states", None)
    if records is None or states is None:  # E1: a turn read again shows its memories as now
        found = memory_stated_many(turn.conversation.user, ids, now=db_now()) if ids else {}
        records = {i: m.record for i, m in found.items()}
        states = {i: m.state for i, m in found.items()}
    extracted = []
    for e in turn.extracted:
        found = e.get("memory") in records
        item = {
            "outcome": e["outcome"],
            "memory": _memory_json(records[e["memory"]], states[e["memory"]]) if found else None,
        }
        if e.get("reason"):
            item["reason"] = e["reason"]
        extracted.append(item)
    return {
        "id": str(turn.pk),
        "conversation": str(turn.conversation_id),
        "turn_key": turn.turn_key,
        "scene": turn.scene,
        "status": turn.status,
        "user_message": {"id": str(turn.user_message_id), "seq": turn.user_message.seq},
        "extracted": extracted,
        "learning": turn.learning,
    }


def reply_json(result) -> dict:
    """The answer to a reply (`turns.replies.ReplyResult`): the message in the reply shape,
    without its text when a forget withholds it (F7.1, F7.5), and whether it was replayed."""
    message = result.message
    return {
        "message": represented(
            ReplyMessageOutput,
            {
                "id": message.id,
                "seq": message.seq,
                "role": message.role,
                "content": None if result.withheld else message.content,
                "created_at": message.created_at,
                "withheld": result.withheld,
            },
        ),
        "replayed": result.replayed,
    }


def plan_json(result) -> dict:
    """The §10 plan body of a `turns.plans.PromptPlanResult` (the GET's answer and I7's `plan`)."""
    body = {"turn": str(result.turn.pk), **plan_body(result.plan)}
    body["policy"] = [represented(DecisionOutput, d) for d in result.decisions]
    body["budget"] = result.params.budget
    body["resolver_version"] = RESOLVER_VERSION
    return body


# ---------------------------------------------------------------------------------------------
# The shapes of the import, message and turn operations (SPEC §10)


class UserImportOutput(serializers.Serializer):
    user = serializers.CharField(help_text="The ref of the user imported into.")
    created = serializers.IntegerField(help_text="How many rows the import created.")
    skipped = serializers.IntegerField(
        help_text="How many rows were already present with the "
        "same content (an import repeated skips them all)."
    )


class MessageOutput(serializers.Serializer):
    id = serializers.UUIDField(
        help_text="The message's id (the `sources` of a memory name messages by it)."
    )
    seq = serializers.IntegerField(
        help_text="The message's number in its conversation: 1, 2, 3… in order."
    )
    role = serializers.ChoiceField(
        choices=["user", "assistant", "system"],
        help_text="Who wrote it: the user, or the companion (`assistant`).",
    )
    content = serializers.CharField(
        allow_null=True,
        help_text="The message's text, as it was sent; null when a forget withholds the "
        "message (`withheld`): a runtime rebuilding its context from this read skips it, so it "
        "never sends the model a forgotten word (F7.5).",
    )
    created_at = serializers.DateTimeField(help_text="When the message was stored.")
    turn = serializers.UUIDField(
        allow_null=True,
        help_text="The turn the message belongs to: the turn it opened (a user "
        "message) or the turn it replied to (the companion's reply); null for neither.",
    )
    withheld = serializers.BooleanField(
        help_text="True when a forget withholds the message: the user still sees it on their "
        "pages, but no prompt plan includes it any more and this answer leaves out its text "
        "(`content` is null) (F6, F7.5)."
    )


class MessagePageOutput(PageOutput):
    results = MessageOutput(many=True, help_text="The messages of this page, oldest first.")


class MessageListQuery(PageQuery):
    after_seq = BoundedIntegerField(
        required=False,
        help_text="Only messages whose `seq` is greater than this: "
        "`after_seq=last_seq-20` answers the conversation's last 20 messages.",
    )
    before_seq = BoundedIntegerField(
        required=False, help_text="Only messages whose `seq` is smaller than this."
    )


class PlanParamsInput(StrictSerializer):
    """I7: the plan parameters of a turn creation (the GET's, without `now`: a plan made
    with its turn is made at that moment)."""

    HELP = {
        "budget": "The prompt's token budget: the plan's memories, history and current message "
        "fit in it (I3).",
        "memory_share": "The largest share of the budget the memory section may take (0.3 by "
        "default).",
        "history": "How history fills the rest: `contiguous` stops at the first message that "
        "does not fit; `skip` goes on past it to older messages that do.",
        "memory_order": "The memory section's order: `certainty` (confirmed first) or "
        "`relevance` (pinned keys, then by relevance to the recent messages) (I6).",
    }

    budget = serializers.IntegerField(min_value=1, max_value=10_000_000, help_text=HELP["budget"])
    memory_share = serializers.FloatField(
        required=False, default=0.3, min_value=0.0, max_value=1.0, help_text=HELP["memory_share"]
    )
    history = serializers.ChoiceField(
        choices=["contiguous", "skip"],
        required=False,
        default="contiguous",
        help_text=HELP["history"],
    )
    capabilities = serializers.ListField(
        child=CleanCharField(max_length=100),
        required=False,
        default=list,
        max_length=50,
        help_text="Capability names (such as `tone.playful`) to decide for this turn; the plan's "
        "`policy` holds one decision per name.",
    )
    memory_order = serializers.ChoiceField(
        choices=["certainty", "relevance"],
        required=False,
        default="certainty",
        help_text=HELP["memory_order"],
    )


class TurnCreateInput(StrictSerializer):
    turn_key = CleanCharField(
        max_length=255,
        help_text="The runtime's own key for this turn, unique in the "
        "conversation: a retry with the same key and content answers the same turn (I4).",
    )
    content = CleanCharField(trim_whitespace=False, help_text="The user's message, as sent.")
    scene = CleanCharField(
        max_length=SCENE_MAX,
        required=False,
        allow_null=True,
        help_text="The scene the turn happens in, if the runtime has scenes: "
        "memories learned from it are scoped to the scene.",
    )
    plan = PlanParamsInput(
        required=False,
        help_text="Plan the turn in the same request: the answer then holds `plan`, equal to "
        "what `GET /turns/{id}/prompt-plan` with the same parameters answers at that moment (I7).",
    )


class MessageRefOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="The message's id.")
    seq = serializers.IntegerField(help_text="The message's number in its conversation.")


class TurnOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="The turn's id.")
    conversation = serializers.UUIDField(help_text="The id of the turn's conversation.")
    turn_key = serializers.CharField(help_text="The runtime's key for the turn, as given.")
    scene = serializers.CharField(allow_null=True, help_text="The turn's scene; null without one.")
    status = serializers.ChoiceField(
        choices=["open", "replied"],
        help_text="`open` until the companion's reply is committed, then `replied`.",
    )
    user_message = MessageRefOutput(help_text="The user's message that opened the turn.")
    extracted = ExtractedOutput(
        many=True,
        help_text="What the turn learned from the user's message: one outcome per "
        "fact found, each memory as it is now (a memory forgotten since shows its state "
        "`forgotten` and no value).",
    )
    learning = serializers.BooleanField(
        help_text="Whether the user's `learn` switch was on when the turn was created (off: "
        "nothing was extracted from its message) (I8)."
    )


class TurnReadOutput(TurnOutput):
    created_at = serializers.DateTimeField(help_text="When the turn was created.")
    reply = MessageOutput(
        allow_null=True,
        help_text="The companion's reply once committed; null while the turn is open.",
    )


class PromptPlanQuery(StrictSerializer):
    budget = serializers.IntegerField(
        min_value=1, max_value=10_000_000, help_text=PlanParamsInput.HELP["budget"]
    )
    memory_share = serializers.FloatField(
        required=False,
        default=0.3,
        min_value=0.0,
        max_value=1.0,
        help_text=PlanParamsInput.HELP["memory_share"],
    )
    history = serializers.ChoiceField(
        choices=["contiguous", "skip"],
        required=False,
        default="contiguous",
        help_text=PlanParamsInput.HELP["history"],
    )
    capabilities = CleanCharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=2000,
        help_text="Comma-separated capability names (such as `tone.playful,media.voice`) to "
        "decide for this turn; the plan's `policy` holds one decision per name.",
    )
    now = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="Plan as of this time instead of the database clock's now.",
    )
    memory_order = serializers.ChoiceField(
        choices=["certainty", "relevance"],
        required=False,
        default="certainty",
        help_text=PlanParamsInput.HELP["memory_order"],
    )


class PlanMessageOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="The message's id.")
    seq = serializers.IntegerField(help_text="The message's number in its conversation.")
    content = serializers.CharField(help_text="The message's text, to put in the prompt.")
    estimated_tokens = serializers.IntegerField(
        help_text="What the message costs in the budget: ceil(UTF-8 bytes / 4) + 4 (I3)."
    )


class PlanHistoryOutput(PlanMessageOutput):
    role = serializers.ChoiceField(
        choices=["user", "assistant", "system"],
        help_text="Who wrote it: the user or the companion (`assistant`).",
    )


class PlanExclusionOutput(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["memory", "message"], help_text="What was left out: a memory or a history message."
    )
    id = serializers.UUIDField(help_text="The id of the memory or message left out.")
    reason = serializers.CharField(
        help_text="Why it was left out (such as `budget`, `memory-off`, `forgotten`, "
        "`withheld`: a memory holding a forgotten value, F7.2)."
    )


class PlanExclusionCountOutput(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["memory", "message"], help_text="What was left out: memories or history messages."
    )
    reason = serializers.CharField(
        help_text="Why they were left out (such as `budget`, `memory-off`, `forgotten`, "
        "`withheld`)."
    )
    count = serializers.IntegerField(
        min_value=0,
        help_text="How many of this kind were left out for this reason, listed in `excluded` "
        "or not.",
    )


PLAN_EXCLUDED = (
    "What was left out of the prompt and why, by id: for each kind and reason at most 20 "
    "entries, so the plan's size follows what it holds and not what is stored (I9). Messages "
    "come newest first; memories left out for `budget` in the order the memory section was "
    "filled, and for any other reason by id. The entries are grouped by kind, then by reason, "
    "in the order of `excluded_counts`, which counts every one."
)
PLAN_EXCLUDED_COUNTS = (
    "How many memories and messages were left out, one entry per kind and reason, sorted by "
    "kind then reason. Each count is the whole total: where it is larger than the entries "
    "`excluded` lists for that kind and reason, the rest were left out for the same reason "
    "but not listed."
)


class PlanMemoryOutput(ProjectedOutput):
    relevance = serializers.FloatField(
        allow_null=True,
        help_text="The memory's relevance score (BM25, rounded to 6 decimals) under "
        "`memory_order=relevance`; null under `certainty` (I6).",
    )


PLAN_MEMORIES = (
    "The memories to put in the prompt, in order. Each carries only what the model should see "
    "— key, label, value, certainty and scope — and no id, so that nothing about the store "
    "leaks into the prompt (P4). The ids are elsewhere: `excluded` names what was left out by "
    "id (at most 20 for each kind and reason, `excluded_counts` counting all), the turn's "
    "stored plan keeps the ids of what was used (shown under each reply on the "
    "user's transcript), and `POST /memory/resolve` answers the full records with their ids."
)


class PromptPlanOutput(serializers.Serializer):
    turn = serializers.UUIDField(help_text="The turn planned.")
    boundary_seq = serializers.IntegerField(
        help_text="The `seq` of the turn's user message: history holds only messages before it "
        "(I1)."
    )
    current_message = PlanMessageOutput(help_text="The turn's user message, always in the prompt.")
    history = PlanHistoryOutput(many=True, help_text="Earlier messages that fit, oldest first.")
    memories = PlanMemoryOutput(many=True, help_text=PLAN_MEMORIES)
    policy = serializers.ListField(
        child=serializers.DictField(),
        help_text="One boundary decision per capability asked "
        "for, in the shape `POST /policy/decide` answers.",
    )
    excluded = PlanExclusionOutput(many=True, help_text=PLAN_EXCLUDED)
    excluded_counts = PlanExclusionCountOutput(many=True, help_text=PLAN_EXCLUDED_COUNTS)
    estimated_tokens = serializers.IntegerField(help_text="What the whole plan costs in tokens.")
    budget = serializers.IntegerField(help_text="The budget the plan was made under.")
    memory_order = serializers.ChoiceField(
        choices=["certainty", "relevance"], help_text="The memory section's order used."
    )
    plan_hash = serializers.CharField(
        help_text="A hash of the plan's ids and parameters: the same inputs give the same hash."
    )
    resolver_version = serializers.CharField(help_text="The version of the resolution rules used.")


class TurnCreateOutput(TurnOutput):
    plan = PromptPlanOutput(
        required=False,
        help_text="The turn's prompt plan; only when the request asked for one (I7).",
    )


class TurnReplyInput(StrictSerializer):
    content = CleanCharField(
        trim_whitespace=False, help_text="The companion's reply, as sent to the user."
    )


class ReplyMessageOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="The reply message's id.")
    seq = serializers.IntegerField(help_text="The reply's number in its conversation.")
    role = serializers.CharField(help_text="Always `assistant`: the companion wrote it.")
    content = serializers.CharField(
        allow_null=True,
        help_text="The reply's text, as first committed; null when a forget withholds the "
        "reply (`withheld`) (F7.5).",
    )
    created_at = serializers.DateTimeField(help_text="When the reply was committed.")
    withheld = serializers.BooleanField(
        help_text="True when a forget withholds the reply — it answers a turn planned with "
        "what a forget purged, or a turn whose own message a forget withholds — so no prompt "
        "plan includes it and `content` is null (F6, F7.1, F7.5)."
    )


class TurnReplyOutput(serializers.Serializer):
    message = ReplyMessageOutput(help_text="The turn's reply message (the first one committed).")
    replayed = serializers.BooleanField(
        help_text="True when the turn already had its reply: this answer repeats it and stores "
        "nothing."
    )
