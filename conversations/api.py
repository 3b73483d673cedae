"""User, character and conversation endpoints (SPEC §10): one APIView per path, each method
validating with a named input, calling one service or selector and rendering an output shape
(`conversations.serializers`). A user's export and import and a conversation's messages are
other paths, with their views in `turns.api`: a snapshot holds every app's rows, and a message
read asks memory which messages a forget withholds (F6)."""

from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import (
    no_query,
    operation,
    paginated,
    put_answer,
    query_params,
    represented,
    validated,
)
from config.serializers import PageQuery

from . import services
from .selectors import (
    character_by_slug,
    character_get,
    character_list,
    conversation_get,
    conversation_list,
    user_by_ref,
)
from .serializers import (
    CharacterOutput,
    CharacterPageOutput,
    CharacterPutInput,
    ConversationCreateInput,
    ConversationListQuery,
    ConversationOutput,
    ConversationPageOutput,
    UserOutput,
    UserPutInput,
)


class UserApi(APIView):
    @operation("user_get", {200: UserOutput}, 400, 404)
    def get(self, request, user_ref):
        """Read a user

        Answer the user with this ref as `PUT /users/{ref}` stored it: the ref and when the user was
        created. An unknown ref answers 404 `not_found` (C4)."""
        no_query(request)
        return Response(UserOutput(user_by_ref(user_ref, field=None)).data)

    @operation("user_put", {201: UserOutput, 200: UserOutput}, 400, request=UserPutInput)
    def put(self, request, user_ref):
        """Create or update a user

        Create the user with this ref, or update the user's email if the ref exists. Answers 201
        when the user was created and 200 when it already existed; calling it again is safe. Every
        other operation names users by this ref."""
        data = validated(UserPutInput, request.data)
        user, created = services.user_put(ref=user_ref, email=data.get("email", ""))
        return put_answer(UserOutput, user, created)

    @operation("user_delete", {204: None}, 404)
    def delete(self, request, user_ref):
        """Erase a user and all their data

        Erase the user and everything stored about them — conversations, messages, turns, memories,
        forgets, boundary rules, decisions and media jobs — in one transaction before answering 204.
        Nothing comes back; export first to keep a copy (§9)."""
        services.user_delete(user=user_by_ref(user_ref, field=None))
        return Response(status=204)


class CharacterListApi(APIView):
    @operation("character_list", {200: CharacterPageOutput}, 400, parameters=[PageQuery])
    def get(self, request):
        """List the characters

        Answer every character of the catalog, by slug, as a paginated list (C4)."""
        validated(PageQuery, query_params(request))
        return paginated(self, request, character_list(), CharacterOutput)


class CharacterApi(APIView):
    @operation("character_get", {200: CharacterOutput}, 400, 404)
    def get(self, request, slug):
        """Read a character

        Answer the character with this slug: its slug and name. An unknown slug answers 404
        `not_found` (C4)."""
        no_query(request)
        return Response(CharacterOutput(character_get(slug)).data)

    @operation(
        "character_put",
        {201: CharacterOutput, 200: CharacterOutput},
        400,
        request=CharacterPutInput,
    )
    def put(self, request, slug):
        """Create or rename a character

        Create the character with this slug, or change its name if the slug exists. Answers 201 when
        created and 200 when it existed. Conversations, memory scopes and boundary rules name the
        character by its slug."""
        data = validated(CharacterPutInput, request.data)
        character, created = services.character_put(slug=slug, name=data["name"])
        return put_answer(CharacterOutput, character, created)


class ConversationCollectionApi(APIView):
    @operation(
        "conversation_list", {200: ConversationPageOutput}, 400, parameters=[ConversationListQuery]
    )
    def get(self, request):
        """List a user's conversations

        Answer the user's conversations, newest first, as a paginated list; with `character`, only
        those with that character. An unknown user or character is a 400 naming the parameter (C4).
        """
        params = validated(ConversationListQuery, query_params(request))
        user = user_by_ref(params["user"], field="user")
        character = character_by_slug(params["character"]) if params.get("character") else None
        return paginated(
            self, request, conversation_list(user, character=character), ConversationOutput
        )

    @operation(
        "conversation_create", {201: ConversationOutput}, 400, request=ConversationCreateInput
    )
    def post(self, request):
        """Start a conversation

        Start a conversation between a user and a character; answers 201 with its id, which turns
        are created under. An unknown user or character is a 400 naming the field."""
        data = validated(ConversationCreateInput, request.data)
        user = user_by_ref(data["user"], field="user")
        character = character_by_slug(data["character"], field="character")
        conversation = services.conversation_create(
            user=user, character=character, title=data["title"]
        )
        return Response(represented(ConversationOutput, conversation), status=201)


class ConversationApi(APIView):
    @operation("conversation_get", {200: ConversationOutput}, 400, 404)
    def get(self, request, conversation_id):
        """Read a conversation

        Answer the conversation: its user, character, title, creation time and `last_seq`, the
        number of its newest message. An unknown id answers 404 `not_found` (C4)."""
        no_query(request)
        return Response(ConversationOutput(conversation_get(conversation_id)).data)

    @operation("conversation_delete", {204: None}, 404)
    def delete(self, request, conversation_id):
        """Delete a conversation

        Delete the conversation with its messages and turns, and the memories scoped to it or its
        scenes, before answering 204. Memories of wider scopes that its messages taught stay,
        keeping their evidence time but no longer naming those messages as sources (§7)."""
        services.conversation_delete(conversation_id=conversation_id)
        return Response(status=204)
