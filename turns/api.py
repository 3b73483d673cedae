"""A user's export and import, a conversation's messages, and the turn endpoints (SPEC §10):
one APIView per path, each method validating with a named input, calling one service or
selector and rendering an output shape (`turns.serializers`). They sit here, above memory:
a snapshot holds every app's rows (§9) and a message read asks memory what a forget withholds
(F6). The user, character and conversation paths are `conversations.api`."""

from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import no_query, operation, paginated, query_params, represented, validated
from config.errors import ValidationError
from conversations.selectors import conversation_get, user_by_ref

from . import creation, plans, replies, selectors
from .portability import user_export, user_import
from .portability.shape import Snapshot, SnapshotInput
from .serializers import (
    MessageListQuery,
    MessagePageOutput,
    PromptPlanOutput,
    PromptPlanQuery,
    TurnCreateInput,
    TurnCreateOutput,
    TurnReadOutput,
    TurnReplyInput,
    TurnReplyOutput,
    UserImportOutput,
    plan_json,
    plan_params,
    reply_json,
    turn_json,
)


class UserExportApi(APIView):
    @operation("user_export", {200: Snapshot}, 400, 404)
    def get(self, request, user_ref):
        """Export a user's data

        Answer everything stored about the user as one snapshot (format `companion-memory/3`): the
        conversations with their messages and turns, memories, forgets, boundary rules, decisions
        and media jobs. Importing the snapshot into an empty deployment gives the same answers (§9).
        """
        no_query(request)
        return Response(user_export(user=user_by_ref(user_ref, field=None)))


class UserImportApi(APIView):
    throttle_scope = "import"

    @operation("user_import", {200: UserImportOutput}, 400, 404, 409, 413, request=SnapshotInput)
    def post(self, request, user_ref):
        """Import a user's snapshot

        Import a snapshot made by `GET /users/{ref}/export`, atomically: every row or none. Ids are
        kept, so importing the same snapshot again creates nothing (`skipped` counts the rows
        already there); a row whose id exists with other content is a 409 `import_conflict` (§9). A
        ref no user can have (see `user_ref`) answers 404 `not_found` (C7). A snapshot of an earlier
        format imports too: `companion-memory/2` with no memory links (F7.2), `companion-memory/1`
        with no withholding links at all (F6)."""
        data = request.data
        if not isinstance(data, dict):
            raise ValidationError("Must be a JSON object.", field="body")
        # A `user` that is not an object is the snapshot's own error, named by its check.
        user_object = data.get("user")
        if isinstance(user_object, dict) and user_object.get("ref") != user_ref:
            raise ValidationError(
                "The snapshot's user.ref must be the user in the path.", field="user.ref"
            )
        user, counts = user_import(data=data)
        return Response({"user": user.username, **counts})


class ConversationMessagesApi(APIView):
    @operation(
        "conversation_messages", {200: MessagePageOutput}, 400, 404, parameters=[MessageListQuery]
    )
    def get(self, request, conversation_id):
        """Read a conversation's messages

        Answer the conversation's messages oldest first (by `seq`), as a paginated list, optionally
        only those after `after_seq` and before `before_seq`. Each message says which turn it
        belongs to and whether a forget withholds it from prompts (`withheld`, F6); a withheld
        message comes with `content` null, so a runtime that rebuilds its context from this read
        skips it (F7.5). To show the last 20 messages, read the conversation's `last_seq` and pass
        `after_seq=last_seq-20` (C4)."""
        params = validated(MessageListQuery, query_params(request))
        conversation = conversation_get(conversation_id)
        rows = selectors.conversation_messages(
            conversation, after_seq=params.get("after_seq"), before_seq=params.get("before_seq")
        )
        return paginated(
            self, request, rows, lambda page: selectors.messages_shown(conversation.user, page)
        )


# ---------------------------------------------------------------------------------------------
# Turns, prompt plans and replies (SPEC §7)


class TurnApi(APIView):
    @operation("turn_get", {200: TurnReadOutput}, 400, 404)
    def get(self, request, turn_id):
        """Read a turn

        Answer the turn: its ids, key, scene and status, the user's message, what it learned — each
        memory as it is now, so a memory forgotten since shows state `forgotten` and no value — and
        the companion's reply once committed (with `content` null when a forget withholds it, F7.5).
        A prompt plan is never stored with its text, so it is not part of the answer; `GET
        /turns/{id}/prompt-plan` plans again. An unknown id answers 404 `not_found` (C4)."""
        no_query(request)
        turn = selectors.turn_get(turn_id)
        body = turn_json(turn)
        body["created_at"] = (
            TurnReadOutput().fields["created_at"].to_representation(turn.created_at)
        )
        body["reply"] = selectors.turn_reply_shown(turn)
        return Response(represented(TurnReadOutput, body))


class TurnPromptPlanApi(APIView):
    @operation(
        "turn_prompt_plan",
        {200: PromptPlanOutput},
        400,
        404,
        409,
        422,
        parameters=[PromptPlanQuery],
    )
    def get(self, request, turn_id):
        """Plan a turn's prompt

        Answer what to send the model for this turn under a token budget: the user's message, the
        memories that apply (in the order asked for), as much earlier history as fits, and the
        boundary decisions for the capabilities named — with what was left out and why (at most 20
        listed for each kind and reason, every one counted in `excluded_counts`). The same inputs
        always give the same plan (`plan_hash`). A message that alone does not fit answers 422
        `budget_exceeded`. A turn whose own message a forget made since withholds has no plan: 409
        `message_withheld` (F7.1). With the user's `use` switch off the memory section is empty and
        each memory is excluded as `memory-off` (I1–I8)."""
        params = validated(PromptPlanQuery, query_params(request))
        capabilities = tuple(c.strip() for c in params["capabilities"].split(",") if c.strip())
        result = plans.turn_prompt_plan(
            turn_id=turn_id,
            budget=params["budget"],
            memory_share=params["memory_share"],
            history=params["history"],
            capabilities=capabilities,
            now=params.get("now"),
            memory_order=params["memory_order"],
        )
        return Response(plan_json(result))


class TurnCreateApi(APIView):
    @operation(
        "turn_create",
        {201: TurnCreateOutput, 200: TurnCreateOutput},
        400,
        404,
        409,
        422,
        request=TurnCreateInput,
    )
    def post(self, request, conversation_id):
        """Create a turn from the user's message

        Store the user's message, open a turn for it and learn what the message says (§8). A retry
        with the same `turn_key` and content answers 200 with the same turn; the same key with other
        content is a 409. With `plan` the answer also holds the turn's prompt plan, computed now —
        also for a retry (I7), unless a forget made since withholds the turn's message: then the
        retry answers 409 `message_withheld` (F7.1). A plan refused for its parameters (a 400 naming
        `plan.capabilities`, `plan.budget`…) stores nothing, so the retry with the same `turn_key`
        creates the turn (C2). Only 422 `budget_exceeded` leaves the turn created; its problem
        carries `turn`, and a retry replays it (I1, I4)."""
        data = validated(TurnCreateInput, request.data)
        params = data.get("plan")
        plan = plan_params(params)
        result = creation.turn_create(
            conversation_id=conversation_id,
            turn_key=data["turn_key"],
            content=data["content"],
            scene=data.get("scene"),
            plan=plan,
        )
        if result.refused is not None:
            result.refused.extra["turn"] = str(result.turn.pk)
            raise result.refused
        body = turn_json(result.turn)
        if plan is not None:
            body["plan"] = plan_json(result.plan)
        return Response(body, status=201 if result.created else 200)


class TurnReplyApi(APIView):
    @operation(
        "turn_reply", {201: TurnReplyOutput, 200: TurnReplyOutput}, 400, 404, request=TurnReplyInput
    )
    def post(self, request, turn_id):
        """Commit the companion's reply

        Store the companion's reply to the turn, exactly once: 201 the first time; any later call
        answers 200 with `replayed: true` and the first reply, whatever its content, so a retry
        after a lost answer is safe (I4). A reply to a turn that a forget made since touches — its
        plan held what the forget purged, or its own message is withheld — is stored withheld: the
        answer says `withheld: true` with `content` null, and no later plan holds it (F6, F7.1,
        F7.5)."""
        data = validated(TurnReplyInput, request.data)
        result = replies.turn_commit_reply(turn_id=turn_id, content=data["content"])
        return Response(reply_json(result), status=200 if result.replayed else 201)
