from django.urls import path

from . import api

app_name = "memory_api"

urlpatterns = [
    path("memories", api.MemoryCollectionApi.as_view(), name="memories"),
    path("memories/<uuid:memory_id>", api.MemoryDetailApi.as_view(), name="memory"),
    path("memories/<uuid:memory_id>/confirm", api.MemoryConfirmApi.as_view(), name="memory-confirm"),
    path("memories/<uuid:memory_id>/correct", api.MemoryCorrectApi.as_view(), name="memory-correct"),
    path("memories/<uuid:memory_id>/retract", api.MemoryRetractApi.as_view(), name="memory-retract"),
    path("memories/<uuid:memory_id>/forget", api.MemoryForgetApi.as_view(), name="memory-forget"),
    path("memory/resolve", api.MemoryResolveApi.as_view(), name="resolve"),
    path("memory/history", api.MemoryHistoryApi.as_view(), name="history"),
    path("memory/remember", api.MemoryRememberApi.as_view(), name="remember"),
    path("memory/ask", api.MemoryAskApi.as_view(), name="ask"),
    path("users/<str:user_ref>/memory-settings", api.MemorySettingsApi.as_view(), name="memory-settings"),
    path("tombstones", api.TombstoneListApi.as_view(), name="tombstones"),
    path("tombstones/<uuid:tombstone_id>", api.TombstoneDetailApi.as_view(), name="tombstone"),
]
