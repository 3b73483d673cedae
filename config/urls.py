from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config import views

api_v1 = [
    path("", include("conversations.urls")),
    path("", include("memory.urls")),
    path("", include("policy.urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start script as a file, so the CSP needs no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    path("", include("config.pages")),
    path("", include("django.contrib.auth.urls")),
    path("", views.home, name="home"),
]

handler404 = "config.views.not_found"
handler500 = "config.views.server_error"
handler400 = "config.views.bad_request"
handler403 = "config.views.forbidden"
