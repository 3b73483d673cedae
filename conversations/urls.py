from django.urls import path

from . import api

# The runtime's API of users, characters and conversations (SPEC §10), under /api/v1/
# (namespace `conversations_api`); their exports, imports, messages and turns are `turns.urls`.
api = [
    path("users/<str:user_ref>", api.UserApi.as_view(), name="user"),
    path("characters", api.CharacterListApi.as_view(), name="characters"),
    path("characters/<str:slug>", api.CharacterApi.as_view(), name="character"),
    path("conversations", api.ConversationCollectionApi.as_view(), name="conversations"),
    path(
        "conversations/<uuid:conversation_id>", api.ConversationApi.as_view(), name="conversation"
    ),
]
