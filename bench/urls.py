"""The project's URLs plus the ceiling of the whole-turn benchmark: a trivial JSON endpoint
served by the same Django stack (middleware included) on the same server."""

from django.http import JsonResponse
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView


def ping(request):
    """The ceiling: a Django view returning JSON through the same middleware, no database."""
    return JsonResponse({"ok": True})


class PingAuthApi(APIView):
    """For context: the same answer through DRF with the API's Bearer-token authentication
    and permission (one query), i.e. the fixed cost every API request pays."""

    def get(self, request):
        return Response({"ok": True})


urlpatterns = [
    path("bench/ping", ping, name="bench-ping"),
    path("bench/ping-auth", PingAuthApi.as_view(), name="bench-ping-auth"),
    path("", include("config.urls")),
]

handler404 = "config.views.not_found"
handler500 = "config.views.server_error"
handler400 = "config.views.bad_request"
handler403 = "config.views.forbidden"
