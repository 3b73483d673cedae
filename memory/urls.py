from django.urls import path

from config.routes import below

from . import api, history_views, views

# The runtime's API (SPEC §10), under /api/v1/ (namespace `memory_api`).
api = [
    path("memories", api.MemoryCollectionApi.as_view(), name="memories"),
    path("memories/<uuid:memory_id>", api.MemoryDetailApi.as_view(), name="memory"),
    *below(
        "memories/<uuid:memory_id>",
        {
            "confirm": api.MemoryConfirmApi.as_view(),
            "correct": api.MemoryCorrectApi.as_view(),
            "retract": api.MemoryRetractApi.as_view(),
            "forget": api.MemoryForgetApi.as_view(),
        },
        name="memory-{}",
    ),
    *below(
        "memory",
        {
            "resolve": api.MemoryResolveApi.as_view(),
            "history": api.MemoryHistoryApi.as_view(),
            "remember": api.MemoryRememberApi.as_view(),
            "ask": api.MemoryAskApi.as_view(),
        },
    ),
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
    *below(
        "<uuid:memory_id>",
        {
            "confirm": views.memory_confirm_view,
            "correct": views.memory_correct_view,
            "retract": views.memory_retract_view,
            "restore": views.memory_restore_view,
            "forget": history_views.memory_forget_view,
            "history": history_views.memory_history_view,
        },
    ),
]
