from django.urls import path

from . import api, history_views, views

# The runtime's API (SPEC §10), under /api/v1/ (namespace `memory_api`).
api = [
    path("memories", api.MemoryCollectionApi.as_view(), name="memories"),
    path("memories/<uuid:memory_id>", api.MemoryDetailApi.as_view(), name="memory"),
    path(
        "memories/<uuid:memory_id>/confirm", api.MemoryConfirmApi.as_view(), name="memory-confirm"
    ),
    path(
        "memories/<uuid:memory_id>/correct", api.MemoryCorrectApi.as_view(), name="memory-correct"
    ),
    path(
        "memories/<uuid:memory_id>/retract", api.MemoryRetractApi.as_view(), name="memory-retract"
    ),
    path("memories/<uuid:memory_id>/forget", api.MemoryForgetApi.as_view(), name="memory-forget"),
    path("memory/resolve", api.MemoryResolveApi.as_view(), name="resolve"),
    path("memory/history", api.MemoryHistoryApi.as_view(), name="history"),
    path("memory/remember", api.MemoryRememberApi.as_view(), name="remember"),
    path("memory/ask", api.MemoryAskApi.as_view(), name="ask"),
    path(
        "users/<str:user_ref>/memory-settings",
        api.MemorySettingsApi.as_view(),
        name="memory-settings",
    ),
    path("tombstones", api.TombstoneListApi.as_view(), name="tombstones"),
    path("tombstones/<uuid:tombstone_id>", api.TombstoneDetailApi.as_view(), name="tombstone"),
]

# The end user's pages, under /memories/ (namespace `memory`).
pages = [
    path("", views.memory_list_view, name="list"),
    path("filter", views.memory_filter_view, name="filter"),
    path("switches", views.memory_switches_view, name="switches"),
    path("forget-selected", history_views.memory_forget_selected_view, name="forget-selected"),
    path("no-longer-true/", views.no_longer_true_list_view, name="no-longer-true"),
    path("forgotten/", history_views.forgotten_list_view, name="forgotten"),
    path(
        "forgotten/<uuid:tombstone_id>/learn-again",
        history_views.tombstone_delete_view,
        name="learn-again",
    ),
    path("<uuid:memory_id>/confirm", views.memory_confirm_view, name="confirm"),
    path("<uuid:memory_id>/correct", views.memory_correct_view, name="correct"),
    path("<uuid:memory_id>/retract", views.memory_retract_view, name="retract"),
    path("<uuid:memory_id>/restore", views.memory_restore_view, name="restore"),
    path("<uuid:memory_id>/forget", history_views.memory_forget_view, name="forget"),
    path("<uuid:memory_id>/history", history_views.memory_history_view, name="history"),
]
