"""The API's URLs plus a trivial authenticated operation, to measure what every API request
costs before its own work (tests/ops/test_request_overhead.py)."""

from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import urlpatterns as project_urlpatterns


class PingApi(APIView):
    def get(self, request):
        return Response({"ok": True})


urlpatterns = [path("api/v1/test-ping", PingApi.as_view()), *project_urlpatterns]
