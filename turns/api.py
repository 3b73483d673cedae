"""User, character and conversation endpoints (SPEC §10)."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import problems, validated
from config.errors import ValidationError
from config.serializers import (
    SCENE_MAX,
    CharacterSlugField,
    CleanCharField,
    StrictSerializer,
    UserRefField,
)
from conversations import services as conversation_services
from conversations.selectors import character_by_slug, user_by_ref
from memory.serializers import ExtractedOutput, ProjectedOutput

from . import replies, services
from .portability import user_export, user_import
from .serializers import plan_json, plan_params, turn_json
from .snapshot import Snapshot, SnapshotInput

User = get_user_model()


class UserPutInput(StrictSerializer):
    email = serializers.EmailField(required=False, allow_blank=True)


class UserOutput(serializers.Serializer):
    ref = serializers.CharField(source="username")
    created_at = serializers.DateTimeField(source="date_joined")


class UserRef(serializers.Serializer):
    user = UserRefField()


class CharacterSlug(serializers.Serializer):
    slug = CharacterSlugField()


class CharacterPutInput(StrictSerializer):
    name = CleanCharField(max_length=200)


class CharacterOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class ConversationCreateInput(StrictSerializer):
    user = CleanCharField(max_length=150)
    character = serializers.SlugField(max_length=100)
    title = CleanCharField(max_length=200, required=False, allow_blank=True, default="")


class ConversationOutput(serializers.Serializer):
    id = serializers.UUIDField()
    user = serializers.CharField(source="user.username")
    character = serializers.CharField(source="character.slug")
    title = serializers.CharField()
    created_at = serializers.DateTimeField()


class UserApi(APIView):
    @extend_schema(operation_id="user_put", request=UserPutInput,
                   responses={201: UserOutput, 200: UserOutput, **problems(400)})
    def put(self, request, user_ref):
        data = validated(UserPutInput, request.data)
        validated(UserRef, {"user": user_ref})
        user, created = services.user_put(ref=user_ref, email=data.get("email", ""))
        return Response(UserOutput(user).data, status=201 if created else 200)

    @extend_schema(operation_id="user_delete", responses={204: None, **problems(404)},
                   description="Erase everything of this user, synchronously (SPEC §9).")
    def delete(self, request, user_ref):
        services.user_delete(user=user_by_ref(user_ref, field=None))
        return Response(status=204)


class UserExportApi(APIView):
    @extend_schema(operation_id="user_export", responses={200: Snapshot, **problems(404)},
                   description="The user's whole snapshot (SPEC §9, format `companion-memory/1`).")
    def get(self, request, user_ref):
        return Response(user_export(user=user_by_ref(user_ref, field=None)))


class UserImportOutput(serializers.Serializer):
    user = serializers.CharField()
    created = serializers.IntegerField()
    skipped = serializers.IntegerField()


class UserImportApi(APIView):
    throttle_scope = "import"

    @extend_schema(operation_id="user_import", request=SnapshotInput,
                   responses={200: UserImportOutput, **problems(400, 409, 413)},
                   description="Import a snapshot atomically and idempotently, keeping ids (SPEC §9).")
    def post(self, request, user_ref):
        data = request.data
        if not isinstance(data, dict):
            raise ValidationError("Must be a JSON object.", field="body")
        ref = data.get("user", {}).get("ref") if isinstance(data.get("user"), dict) else None
        if ref != user_ref:
            raise ValidationError("The snapshot's user.ref must be the user in the path.", field="user.ref")
        user, counts = user_import(data=data)
        return Response({"user": user.username, **counts})


class CharacterPutApi(APIView):
    @extend_schema(operation_id="character_put", request=CharacterPutInput,
                   responses={201: CharacterOutput, 200: CharacterOutput, **problems(400)})
    def put(self, request, slug):
        validated(CharacterSlug, {"slug": slug})
        data = validated(CharacterPutInput, request.data)
        character, created = conversation_services.character_put(slug=slug, name=data["name"])
        return Response(CharacterOutput(character).data, status=201 if created else 200)


class ConversationCreateApi(APIView):
    @extend_schema(operation_id="conversation_create", request=ConversationCreateInput,
                   responses={201: ConversationOutput, **problems(400)})
    def post(self, request):
        data = validated(ConversationCreateInput, request.data)
        user = user_by_ref(data["user"], field="user")
        character = character_by_slug(data["character"], field="character")
        conversation = conversation_services.conversation_create(user=user, character=character, title=data["title"])
        return Response(ConversationOutput(conversation).data, status=201)


class ConversationDeleteApi(APIView):
    @extend_schema(operation_id="conversation_delete", responses={204: None, **problems(404)})
    def delete(self, request, conversation_id):
        services.conversation_delete(conversation_id=conversation_id)
        return Response(status=204)


# ---------------------------------------------------------------------------------------------
# Turns, prompt plans and replies (SPEC §7)




class PlanParamsInput(StrictSerializer):
    """I7: the plan parameters of a turn creation (the GET's, without `now`: a plan made
    with its turn is made at that moment)."""

    budget = serializers.IntegerField(min_value=1, max_value=10_000_000)
    memory_share = serializers.FloatField(required=False, default=0.3, min_value=0.0, max_value=1.0)
    history = serializers.ChoiceField(choices=["contiguous", "skip"], required=False, default="contiguous")
    capabilities = serializers.ListField(
        child=CleanCharField(max_length=100), required=False, default=list, max_length=50,
        help_text="Capability names (the GET's comma-separated `capabilities`, as a list).")
    memory_order = serializers.ChoiceField(
        choices=["certainty", "relevance"], required=False, default="certainty",
        help_text="I6: `certainty` (the I3 order) or `relevance`.")


class TurnCreateInput(StrictSerializer):
    turn_key = CleanCharField(max_length=255)
    content = CleanCharField(trim_whitespace=False)
    scene = CleanCharField(max_length=SCENE_MAX, required=False, allow_null=True)
    plan = PlanParamsInput(
        required=False,
        help_text="I7: plan the turn in the same request; the answer then holds `plan`, equal to "
        "what `GET /turns/{id}/prompt-plan` with the same parameters answers at that moment.")


class MessageRefOutput(serializers.Serializer):
    id = serializers.UUIDField()
    seq = serializers.IntegerField()


class TurnOutput(serializers.Serializer):
    id = serializers.UUIDField()
    conversation = serializers.UUIDField()
    turn_key = serializers.CharField()
    scene = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=["open", "replied"])
    user_message = MessageRefOutput()
    extracted = ExtractedOutput(many=True)
    learning = serializers.BooleanField(
        help_text="I8: whether the user's `learn` switch was on when the turn was created "
        "(off: nothing was extracted from its message).")


class PromptPlanQuery(StrictSerializer):
    budget = serializers.IntegerField(min_value=1, max_value=10_000_000)
    memory_share = serializers.FloatField(required=False, default=0.3, min_value=0.0, max_value=1.0)
    history = serializers.ChoiceField(choices=["contiguous", "skip"], required=False, default="contiguous")
    capabilities = CleanCharField(required=False, allow_blank=True, default="", max_length=2000,
                                  help_text="Comma-separated capability names.")
    now = serializers.DateTimeField(required=False, allow_null=True)
    memory_order = serializers.ChoiceField(
        choices=["certainty", "relevance"], required=False, default="certainty",
        help_text="I6: `certainty` (the I3 order) or `relevance` (pinned keys, then BM25 score "
        "against the current message and the two before it, then the I3 order).")


class PlanMessageOutput(serializers.Serializer):
    id = serializers.UUIDField()
    seq = serializers.IntegerField()
    content = serializers.CharField()
    estimated_tokens = serializers.IntegerField()


class PlanHistoryOutput(PlanMessageOutput):
    role = serializers.ChoiceField(choices=["user", "assistant", "system"])


class PlanExclusionOutput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["memory", "message"])
    id = serializers.UUIDField()
    reason = serializers.CharField()


class PlanMemoryOutput(ProjectedOutput):
    relevance = serializers.FloatField(
        allow_null=True,
        help_text="I6: the memory's BM25 score rounded to 6 decimals; null under `certainty`.")


class PromptPlanOutput(serializers.Serializer):
    turn = serializers.UUIDField()
    boundary_seq = serializers.IntegerField()
    current_message = PlanMessageOutput()
    history = PlanHistoryOutput(many=True)
    memories = PlanMemoryOutput(many=True)
    policy = serializers.ListField(child=serializers.DictField())
    excluded = PlanExclusionOutput(many=True)
    estimated_tokens = serializers.IntegerField()
    budget = serializers.IntegerField()
    memory_order = serializers.ChoiceField(choices=["certainty", "relevance"])
    plan_hash = serializers.CharField()
    resolver_version = serializers.CharField()


class TurnPromptPlanApi(APIView):
    @extend_schema(
        operation_id="turn_prompt_plan", parameters=[PromptPlanQuery],
        responses={200: PromptPlanOutput, **problems(400, 404, 422)},
        description="The prompt plan of a turn under a token budget (I1–I6). With the user's `use` "
        "switch off (I8) the memory section is empty and every projected memory is excluded with "
        "reason `memory-off`.",
    )
    def get(self, request, turn_id):
        params = validated(PromptPlanQuery, dict(request.query_params.items()))
        capabilities = tuple(c.strip() for c in params["capabilities"].split(",") if c.strip())
        result = services.turn_prompt_plan(
            turn_id=turn_id, budget=params["budget"], memory_share=params["memory_share"],
            history=params["history"], capabilities=capabilities, now=params.get("now"),
            memory_order=params["memory_order"],
        )
        return Response(plan_json(result))


class TurnCreateOutput(TurnOutput):
    plan = PromptPlanOutput(required=False, help_text="I7: only when the request asked for a plan.")


class TurnCreateApi(APIView):
    @extend_schema(
        operation_id="turn_create", request=TurnCreateInput,
        responses={201: TurnCreateOutput, 200: TurnCreateOutput, **problems(400, 404, 409, 422)},
        description="Store the user message, create the turn and extract memories from it (I1, I4, §8). "
        "A retry with the same turn_key and content answers 200 with the same turn; other content is a 409. "
        "With `plan` (I7) the answer also holds the turn's prompt plan, computed now — also for a "
        "replayed creation. A plan refused for its parameters or capabilities (400 naming "
        "`plan.capabilities`, `plan.budget`…) stores nothing (C2): the retry with the same turn_key "
        "creates the turn. Only 422 `budget_exceeded` leaves the turn created; its problem carries "
        "`turn`, and a retry with the same turn_key and content replays it.",
    )
    def post(self, request, conversation_id):
        data = validated(TurnCreateInput, request.data)
        params = data.get("plan")
        plan = plan_params(params)
        result = services.turn_create(
            conversation_id=conversation_id, turn_key=data["turn_key"], content=data["content"],
            scene=data.get("scene"), plan=plan,
        )
        if result.refused is not None:
            result.refused.extra["turn"] = str(result.turn.pk)
            raise result.refused
        body = turn_json(result.turn)
        if plan is not None:
            body["plan"] = plan_json(result.plan or services.turn_plan_replayed(result, plan))
        return Response(body, status=201 if result.created else 200)


class TurnReplyInput(StrictSerializer):
    content = CleanCharField(trim_whitespace=False)


class ReplyMessageOutput(serializers.Serializer):
    id = serializers.UUIDField()
    seq = serializers.IntegerField()
    role = serializers.CharField()
    content = serializers.CharField()
    created_at = serializers.DateTimeField()


class TurnReplyOutput(serializers.Serializer):
    message = ReplyMessageOutput()
    replayed = serializers.BooleanField()


class TurnReplyApi(APIView):
    @extend_schema(
        operation_id="turn_reply", request=TurnReplyInput,
        responses={201: TurnReplyOutput, 200: TurnReplyOutput, **problems(400, 404)},
        description="Commit the assistant reply exactly once (I4): 201 the first time, then 200 with `replayed: true` and the first message.",
    )
    def post(self, request, turn_id):
        data = validated(TurnReplyInput, request.data)
        result = replies.turn_commit_reply(turn_id=turn_id, content=data["content"])
        body = {"message": ReplyMessageOutput(result.message).data, "replayed": result.replayed}
        return Response(body, status=200 if result.replayed else 201)
