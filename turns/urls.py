from django.urls import path

from config.routes import below

from . import api, views

# The runtime's API of exports, imports, messages and turns (SPEC §10), under /api/v1/
# (namespace `turns_api`); users, characters and conversations are `conversations.urls`.
api = [
    *below(
        "users/<str:user_ref>",
        {"export": api.UserExportApi.as_view(), "import": api.UserImportApi.as_view()},
        name="user-{}",
    ),
    *below(
        "conversations/<uuid:conversation_id>",
        {"messages": api.ConversationMessagesApi.as_view(), "turns": api.TurnCreateApi.as_view()},
    ),
    path("turns/<uuid:turn_id>", api.TurnApi.as_view(), name="turn"),
    *below(
        "turns/<uuid:turn_id>",
        {"prompt-plan": api.TurnPromptPlanApi.as_view(), "reply": api.TurnReplyApi.as_view()},
    ),
]

# The transcripts, under /conversations/ (namespace `conversations`).
pages = [
    path("", views.conversation_list_view, name="list"),
    path("<uuid:conversation_id>/", views.conversation_detail_view, name="detail"),
    path("<uuid:conversation_id>/delete", views.conversation_delete_view, name="delete"),
]

# "Your data", under /data/ (namespace `data`).
data_pages = [
    path("", views.data_index_view, name="index"),
    path("export.json", views.data_export_view, name="export"),
    path("time-zone", views.data_time_zone_view, name="time-zone"),
    path("forget-everything", views.forget_everything_view, name="forget-everything"),
    path("delete-account", views.delete_account_view, name="delete-account"),
]
