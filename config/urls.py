"""The one place that knows every app: the runtime's API under /api/v1/, the end user's pages,
the admin (with the support views), sign-in, and the error handlers."""

from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from agents import urls as agents_urls
from config import ops, views
from config.pages import SignInForm, SignOutView
from conversations import urls as conversations_urls
from events import urls as events_urls
from memory import urls as memory_urls
from policy import urls as policy_urls
from turns import urls as turns_urls

api_v1 = [
    path("", include((conversations_urls.api, "conversations_api"))),
    path("", include((turns_urls.api, "turns_api"))),
    path("", include((memory_urls.api, "memory_api"))),
    path("", include((policy_urls.api, "policy_api"))),
    path("", include((events_urls.api, "events_api"))),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics_view, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start script as a file, so the CSP needs no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    # Anything else under /api/ (an unknown operation, a malformed id) is a problem+json 404,
    # with DJANGO_DEBUG on too; the schema and docs keep their trailing-slash redirects.
    re_path(r"^api/(?!(?:schema|docs)/?$)(?P<rest>.*)$", views.api_not_found, name="api-not-found"),
    path("problems/", views.problem_index, name="problems"),
    path("problems/<str:code>", views.problem_page, name="problem"),
    path("docs/connect-an-assistant", views.connect_an_assistant, name="connect-an-assistant"),
    path("admin/", admin.site.urls),
    path("memories/", include((memory_urls.pages, "memory"))),
    path("boundaries/", include((policy_urls.pages, "policy"))),
    path("conversations/", include((turns_urls.pages, "conversations"))),
    path("data/", include((turns_urls.data_pages, "data"))),
    path("assistants/", include((agents_urls.pages, "agents"))),
    path("mcp", agents_urls.mcp_view, name="mcp"),
    path("login/", LoginView.as_view(authentication_form=SignInForm), name="login"),
    path("logout/", SignOutView.as_view(), name="logout"),
    path("", include("django.contrib.auth.urls")),
    path("", views.home, name="home"),
]

handler404 = "config.views.not_found"
handler500 = "config.views.server_error"
handler400 = "config.views.bad_request"
handler403 = "config.views.forbidden"
