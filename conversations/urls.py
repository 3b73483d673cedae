from django.urls import path

from . import api

app_name = "conversations_api"

urlpatterns = [
    path("users/<str:user_ref>", api.UserApi.as_view(), name="user"),
    path("users/<str:user_ref>/export", api.UserExportApi.as_view(), name="user-export"),
    path("users/<str:user_ref>/import", api.UserImportApi.as_view(), name="user-import"),
    path("characters/<str:slug>", api.CharacterPutApi.as_view(), name="character"),
    path("conversations", api.ConversationCreateApi.as_view(), name="conversations"),
    path("conversations/<uuid:conversation_id>", api.ConversationDeleteApi.as_view(), name="conversation"),
    path("conversations/<uuid:conversation_id>/turns", api.TurnCreateApi.as_view(), name="turns"),
    path("turns/<uuid:turn_id>/prompt-plan", api.TurnPromptPlanApi.as_view(), name="prompt-plan"),
    path("turns/<uuid:turn_id>/reply", api.TurnReplyApi.as_view(), name="reply"),
]
