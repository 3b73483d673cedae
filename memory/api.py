"""Memory endpoints (SPEC §10): one APIView per operation, validating with a named input
serializer, calling one service or selector, rendering with an output shape."""

import logging

from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import no_query, operation, paginated, query_params, represented, validated
from config.clock import db_now
from config.errors import ValidationError
from conversations.scopes import Scope
from conversations.selectors import load_context, user_by_ref

from . import asking, forgetting, services
from .domain import REASON_WITHHELD, RESOLVER_VERSION
from .selectors.history import slot_history
from .selectors.pages import tombstone_get, tombstone_list
from .selectors.resolution import ContextResolution
from .selectors.states import memory_list, memory_stated
from .serializers import (
    ACTIVE,
    AskOutput,
    AskQuery,
    AssertOutput,
    EmptyInput,
    HistoryPageOutput,
    HistoryQuery,
    MemoryAssertInput,
    MemoryCorrectInput,
    MemoryForgetInput,
    MemoryListQuery,
    MemoryOutput,
    MemoryPageOutput,
    MemorySettingsInput,
    MemorySettingsOutput,
    RememberInput,
    RememberOutput,
    ResolveInput,
    ResolveOutput,
    RetractOutput,
    TombstoneListQuery,
    TombstoneOutput,
    TombstonePageOutput,
    assert_json,
    listed_memory_json,
    memory_json,
    withheld_memory_json,
)
from .switches import memory_settings_of, prompt_projection

log = logging.getLogger("companion.memory")


def _scope(data: dict) -> Scope:
    return Scope(
        kind=data["kind"],
        character=data.get("character"),
        conversation=data.get("conversation"),
        scene=data.get("scene"),
    )


class MemoryCollectionApi(APIView):
    @operation(
        "memory_assert", {201: AssertOutput, 200: AssertOutput}, 400, 409, request=MemoryAssertInput
    )
    def post(self, request):
        """Remember a fact

        Store a fact about a user — a key, a value and the scope it holds in — with who vouches for
        it (`authority`) and how sure it is. Answers 201 `created` for a new memory; 200 `unchanged`
        when the same value is already current, `replayed` for a repeated `idempotency_key`, or
        `blocked` when the user forgot this fact (reason `forgotten`) or switched learning off and
        the write was not theirs (reason `paused`) (W1–W9, I8)."""
        data = validated(MemoryAssertInput, request.data)
        user = user_by_ref(data["user"], field="user")
        result = services.memory_assert(
            user=user,
            key=data["key"],
            value=data["value"],
            scope=_scope(data["scope"]),
            authority=data["authority"],
            confidence=data["confidence"],
            valid_from=data.get("valid_from"),
            valid_until=data.get("valid_until"),
            sources=[str(s) for s in data.get("sources", [])],
            supersedes=str(data["supersedes"]) if data.get("supersedes") else None,
            idempotency_key=data.get("idempotency_key"),
        )
        return Response(assert_json(result), status=result.http_status)

    @operation("memory_list", {200: MemoryPageOutput}, 400, parameters=[MemoryListQuery])
    def get(self, request):
        """List a user's memories

        Answer the user's stored memories as a paginated list, ordered by key, scope and version,
        optionally only those of a key, a scope id, a stored status or a state. Each memory carries
        its `state` now (active, superseded, forgotten…); the filters apply before pagination, so
        `count` agrees with them (E1). A memory a forget withholds (it holds a forgotten value) is
        listed only with `include_withheld=true`, and then with `value` null and its key's free part
        masked (F7.2)."""
        params = validated(MemoryListQuery, query_params(request))
        user = user_by_ref(params["user"], field="user")
        found = memory_list(
            user,
            key=params.get("key"),
            scope_id=params.get("scope"),
            status=params.get("status"),
            state=params.get("state"),
            include_withheld=params["include_withheld"],
            now=db_now(),
        )
        return paginated(self, request, found, lambda page: [listed_memory_json(m) for m in page])


class MemoryDetailApi(APIView):
    @operation("memory_get", {200: MemoryOutput}, 400, 404)
    def get(self, request, memory_id):
        """Read a memory

        Answer one memory with its `state` now (active, superseded, forgotten…) and what decided it.
        A forgotten memory keeps its id and key but no value (E1, F2); a memory a forget withholds
        is answered with `value` null and its key's free part masked (F7.2)."""
        no_query(request)
        found = memory_stated(memory_id, now=db_now())
        return Response(listed_memory_json(found))


class MemoryConfirmApi(APIView):
    @operation(
        "memory_confirm", {201: AssertOutput, 200: AssertOutput}, 400, 404, 409, request=EmptyInput
    )
    def post(self, request, memory_id):
        """Confirm a memory

        Record that the user confirmed this memory: a new version with the same value and authority
        `user-confirmed`, which outranks what was inferred. A memory that is no longer current is a
        409, unless what holds it now is the user's own word for the same value (this confirm made
        again): 200 `unchanged` with that memory (§2)."""
        validated(EmptyInput, request.data)
        result = services.memory_confirm(record_id=memory_id)
        return Response(assert_json(result), status=result.http_status)


class MemoryCorrectApi(APIView):
    @operation(
        "memory_correct",
        {201: AssertOutput, 200: AssertOutput},
        400,
        404,
        409,
        request=MemoryCorrectInput,
    )
    def post(self, request, memory_id):
        """Correct a memory

        Replace this memory's value with the one the user gave: a new version with authority
        `user-corrected` that supersedes it. A memory that is no longer current is a 409, unless
        what holds it now is the user's own word for this value (this correction made again): 200
        `unchanged` with that memory (§2)."""
        data = validated(MemoryCorrectInput, request.data)
        result = services.memory_correct(record_id=memory_id, value=data["value"])
        return Response(assert_json(result), status=result.http_status)


class MemoryRetractApi(APIView):
    @operation("memory_retract", {200: RetractOutput}, 400, 404, 409, request=EmptyInput)
    def post(self, request, memory_id):
        """Mark a memory no longer true

        Record that this fact is no longer true from now on: every open version of it in its scope
        ends now. Unlike a forget, the history stays visible and an older message cannot bring the
        value back (W10)."""
        validated(EmptyInput, request.data)
        result = services.memory_retract(record_id=memory_id)
        return Response(
            {
                "retracted_at": MemoryOutput()
                .fields["valid_from"]
                .to_representation(result.retracted_at),
                "records": [memory_json(r, result.states[r.id]) for r in result.records],
            }
        )


class MemoryForgetApi(APIView):
    @operation("memory_forget", {200: TombstoneOutput}, 400, 404, 409, request=MemoryForgetInput)
    def post(self, request, memory_id):
        """Forget a memory

        Forget this memory: its values are erased and the companion will not learn it again from the
        messages it already has. Answers the tombstone that records the forget (never the value),
        with how many messages and other memories it withholds (F6, F7.2). `everywhere` forgets the
        key in every scope, `whole_key` every value of a many-valued key (F1–F3)."""
        data = validated(MemoryForgetInput, request.data)
        tombstone = forgetting.memory_forget(
            record_id=memory_id, everywhere=data["everywhere"], whole_key=data["whole_key"]
        )
        return Response(represented(TombstoneOutput, tombstone))


class MemoryResolveApi(APIView):
    @operation("memory_resolve", {200: ResolveOutput}, 400, request=ResolveInput)
    def post(self, request):
        """Resolve the memories that apply

        Answer which memories apply in a context — a user, a character, a conversation or a scene,
        at a time — and why the others do not, and what a prompt would get. The body's `context`
        object is required (a 400 names `context` when it is missing). With the user's `use` switch
        off `prompt` is empty and what it would have held is in `prompt_excluded` with reason
        `memory-off` (R1–R8, P1–P4, I8). A memory a forget withholds in this context stays in
        `active` with `value` null and its key's free part masked, and is in `prompt_excluded` with
        reason `withheld` (F7.2)."""
        data = validated(ResolveInput, request.data)
        ctx = load_context(data["context"])
        keys = data.get("keys") or None
        result = ContextResolution(ctx, keys)
        log.info("resolve %s", result.log_line())
        resolution = result.resolution
        projection = prompt_projection(result.projection, memory_settings_of(ctx.user))
        withheld = {e.id for e in projection.excluded if e.reason == REASON_WITHHELD}
        body = {
            # E1: what is active in a context is active in its own scope (slots never cross
            # scopes); F7.2: what a forget withholds here, masked.
            "active": [
                withheld_memory_json(r, ACTIVE) if r.id in withheld else memory_json(r, ACTIVE)
                for r in resolution.active
            ],
            "excluded": [{"id": e.id, "reason": e.reason} for e in resolution.excluded],
            "prompt": [p.as_prompt() for p in projection.prompt],
            "prompt_excluded": [{"id": e.id, "reason": e.reason} for e in projection.excluded],
            "trace": resolution.trace,
            "resolver_version": resolution.trace.get("resolver_version") or RESOLVER_VERSION,
        }
        if data.get("explain"):
            explanation = resolution.explain(str(data["explain"]))
            if explanation is None:
                raise ValidationError(
                    "No candidate record with this id for this context.", field="explain"
                )
            body["explain"] = explanation.as_dict()
        return Response(body)


class MemoryHistoryApi(APIView):
    @operation("memory_history", {200: HistoryPageOutput}, 400, parameters=[HistoryQuery])
    def get(self, request):
        """Read a fact's history

        Answer every version of one key in one scope, in the order they became valid, each with when
        it effectively ended, as a paginated list. `scope` is a scope id; the user's own scope by
        default (W11). A version a forget withholds (F7.2) comes back with `value` null and the free
        part of its key masked."""
        params = validated(HistoryQuery, query_params(request))
        user = user_by_ref(params["user"], field="user")
        scope_id = params.get("scope") or f"user:{user.username}"
        history = slot_history(user, key=params["key"], scope_id=scope_id, now=db_now())
        to_time = MemoryOutput().fields["valid_from"].to_representation
        rows = []
        for r in history.records:
            # F7.2: a version a forget withholds is read back masked, as every runtime read.
            as_json = withheld_memory_json if r.withheld_by else memory_json
            row = as_json(r, history.states[r.id])
            end = history.ends.get(r.id)
            row["effective_until"] = to_time(end) if end else None
            rows.append(row)
        return paginated(self, request, rows)


class MemoryRememberApi(APIView):
    @operation("memory_remember", {200: RememberOutput}, 400, request=RememberInput)
    def post(self, request):
        """Learn from a text

        Find the facts a text states about the user ("My cat is called Miso", "I live in Oslo") and
        remember each, as a turn does with the user's message. With the user's `learn` switch off
        nothing is extracted (§8, I8)."""
        data = validated(RememberInput, request.data)
        ctx = load_context(data["context"])
        results = services.memory_remember(ctx=ctx, text=data["text"], source=data.get("source"))
        return Response({"extracted": [assert_json(r) for r in results]})


class MemoryAskApi(APIView):
    @operation("memory_ask", {200: AskOutput}, 400, parameters=[AskQuery])
    def get(self, request):
        """Ask what is remembered

        Answer a simple question in words ("Where do I work?", "What is my dog called?") from the
        user's own-scope memories active now. `understood` says whether the question was recognised:
        an unrecognised one answers `answer: null, understood: false`; a recognised one with nothing
        remembered answers `answer: null, understood: true` (C5)."""
        params = validated(AskQuery, query_params(request))
        user = user_by_ref(params["user"], field="user")
        asked = asking.ask(user, params["q"])
        return Response(
            {
                "answer": asked.answer,
                "understood": asked.understood,
                "memory": memory_json(asked.record, ACTIVE) if asked.record else None,
            }
        )


class TombstoneListApi(APIView):
    @operation("tombstone_list", {200: TombstonePageOutput}, 400, parameters=[TombstoneListQuery])
    def get(self, request):
        """List a user's forgets

        Answer the user's tombstones — one per forget, with its key and scope, never the value, and
        how many messages and other memories it withholds (F6, F7.2) — newest first, as a paginated
        list (F1)."""
        params = validated(TombstoneListQuery, query_params(request))
        user = user_by_ref(params["user"], field="user")
        qs = tombstone_list(user)
        return paginated(self, request, qs, TombstoneOutput)


class TombstoneDetailApi(APIView):
    @operation("tombstone_get", {200: TombstoneOutput}, 400, 404)
    def get(self, request, tombstone_id):
        """Read a forget

        Answer one tombstone: the key and scope forgotten and when, never the value, and how many
        messages and other memories it withholds (F6, F7.2). An unknown id answers 404 `not_found`
        (C4)."""
        no_query(request)
        return Response(TombstoneOutput(tombstone_get(tombstone_id)).data)

    @operation("tombstone_delete", {204: None}, 404)
    def delete(self, request, tombstone_id):
        """Undo a forget

        Delete the tombstone so that the companion may learn this again. Values the forget erased do
        not come back (F4)."""
        forgetting.tombstone_delete(tombstone_id=tombstone_id)
        return Response(status=204)


class MemorySettingsApi(APIView):
    """I8: the user's two memory switches."""

    @operation("memory_settings_get", {200: MemorySettingsOutput}, 400, 404)
    def get(self, request, user_ref):
        """Read the memory switches

        Answer the user's two memory switches: `learn` (the companion may learn new memories from
        messages) and `use` (memories may enter prompts), both on by default (I8)."""
        no_query(request)
        user = user_by_ref(user_ref, field=None)
        return Response(_settings_json(memory_settings_of(user)))

    @operation(
        "memory_settings_put", {200: MemorySettingsOutput}, 400, 404, request=MemorySettingsInput
    )
    def put(self, request, user_ref):
        """Switch learning or memory use

        Switch learning and/or memory use on or off; an omitted switch stays as it is. Nothing is
        deleted either way. The change records when it was made and that it came through the API
        (I8)."""
        data = validated(MemorySettingsInput, request.data)
        user = user_by_ref(user_ref, field=None)
        result = services.memory_settings_set(
            user=user,
            changed_by="api",
            learn=data.get("learn"),
            use=data.get("use"),
        )
        return Response(_settings_json(result))


def _settings_json(settings) -> dict:
    return MemorySettingsOutput(
        {
            "learn": settings.learn,
            "use": settings.use,
            "changed_at": settings.changed_at,
            "changed_by": settings.changed_by,
        }
    ).data
