"""User, character and conversation endpoints (SPEC §10)."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import problems, validated
from config.errors import ValidationError

from . import services
from .selectors import character_by_slug, user_by_ref
from .serializers import CleanCharField, StrictSerializer

User = get_user_model()
USERNAME_FIELD = User._meta.get_field("username")


class UserPutInput(StrictSerializer):
    email = serializers.EmailField(required=False, allow_blank=True)


class UserOutput(serializers.Serializer):
    ref = serializers.CharField(source="username")
    created_at = serializers.DateTimeField(source="date_joined")


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


def _check_user_ref(ref: str) -> None:
    for validator in USERNAME_FIELD.validators:
        try:
            validator(ref)
        except Exception:
            raise ValidationError(
                "A user ref is 1–150 letters, digits and @/./+/-/_ characters.", field="user"
            ) from None


class UserPutApi(APIView):
    @extend_schema(operation_id="user_put", request=UserPutInput,
                   responses={201: UserOutput, 200: UserOutput, **problems(400)})
    def put(self, request, user_ref):
        data = validated(UserPutInput, request.data or {})
        _check_user_ref(user_ref)
        user, created = services.user_put(ref=user_ref, email=data.get("email", ""))
        return Response(UserOutput(user).data, status=201 if created else 200)


class CharacterPutApi(APIView):
    @extend_schema(operation_id="character_put", request=CharacterPutInput,
                   responses={201: CharacterOutput, 200: CharacterOutput, **problems(400)})
    def put(self, request, slug):
        data = validated(CharacterPutInput, request.data)
        character, created = services.character_put(slug=slug, name=data["name"])
        return Response(CharacterOutput(character).data, status=201 if created else 200)


class ConversationCreateApi(APIView):
    @extend_schema(operation_id="conversation_create", request=ConversationCreateInput,
                   responses={201: ConversationOutput, **problems(400)})
    def post(self, request):
        data = validated(ConversationCreateInput, request.data)
        user = user_by_ref(data["user"], field="user")
        character = character_by_slug(data["character"], field="character")
        conversation = services.conversation_create(user=user, character=character, title=data["title"])
        return Response(ConversationOutput(conversation).data, status=201)


class ConversationDeleteApi(APIView):
    @extend_schema(operation_id="conversation_delete", responses={204: None, **problems(404)})
    def delete(self, request, conversation_id):
        services.conversation_delete(conversation_id=conversation_id)
        return Response(status=204)
