"""Error pages: a page that fails — 404, 403 (also a refused form), 400,
500 — answers the site's own styled HTML with navigation; the API keeps answering
problem+json (SPEC §10) for the same errors."""

import sys
import types
from html import unescape

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory
from django.urls import include, path

from config import error_pages, views
from tests.helpers import assert_problem

NAV_LINKS = ('href="/memories/"', 'href="/boundaries/"', 'href="/conversations/"', 'href="/data/"')


def assert_styled_page(response, status: int, heading: str):
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert '<link rel="stylesheet" href="/static/css/pages.css">' in html
    assert '<main id="main"' in html and f"<h1>{heading}</h1>" in html
    assert 'aria-labelledby="error-nav-title"' in html
    for link in NAV_LINKS:
        assert link in html
    return html


# --- 404 --------------------------------------------------------------------------------------


def test_it_answers_an_unknown_page_with_the_styled_404(client, db):
    html = assert_styled_page(client.get("/no-such-page/"), 404, "This page does not exist")
    assert 'href="/login/">Sign in</a>' in html  # a visitor is offered the way in


def test_it_gives_a_signed_in_user_the_404_with_the_sites_navigation(page, sam):
    html = assert_styled_page(
        page.get("/memories/not-a-uuid/history"), 404, "This page does not exist"
    )
    assert 'aria-label="Main"' in html and "Signed in as <strong>sam</strong>" in html
    assert 'href="/login/">Sign in</a>' not in html


def test_it_answers_the_styled_404_for_another_users_object(page, alex_conv):
    assert_styled_page(page.get(f"/conversations/{alex_conv.pk}/"), 404, "This page does not exist")


def test_it_keeps_problem_json_for_an_unknown_api_path(client, db):
    """SPEC §10: every API error is an RFC 9457 problem with a stable code."""
    assert_problem(client.get("/api/v1/no-such-thing"), 404, "not_found")


# --- 403 --------------------------------------------------------------------------------------


def test_it_answers_the_admins_403_with_the_reason_for_a_support_page_refused_to_staff(db):
    """A staff member without the permission stays in the admin: its own page (header,
    navigation), saying which permission is missing — not the user site's page."""
    from tests.factories import UserFactory

    staff = UserFactory(username="staff-only", is_staff=True)
    client = Client()
    client.force_login(staff)
    for url, reason in (
        ("/admin/support/explain/", "needs the permission “Can use the support explain view”"),
        ("/admin/support/reveal/", "permission to reveal a user's private text"),
    ):
        response = client.get(url)
        html = unescape(response.content.decode())
        assert response.status_code == 403
        assert "You cannot open this page" in html and reason in html
        assert 'id="site-name"' in html and "pages.css" not in html
        assert "Only you can see these pages" not in html


def test_it_answers_the_styled_403_to_a_form_without_its_csrf_token_and_changes_nothing(sam):
    from policy.models import PolicyRule

    client = Client(enforce_csrf_checks=True)
    client.force_login(sam)
    response = client.post(
        "/boundaries/set", {"capability": "media.image", "effect": "deny", "where": "global"}
    )
    assert_styled_page(response, 403, "That form could not be sent")
    assert not PolicyRule.objects.filter(user=sam).exists()


def test_it_keeps_problem_json_for_an_api_403():
    request = RequestFactory().get("/api/v1/memories")
    assert_problem(views.forbidden(request, PermissionDenied()), 403, "permission_denied")


# --- 400 --------------------------------------------------------------------------------------


def test_it_answers_the_styled_400_to_a_bad_page_request(db):
    request = RequestFactory().get("/memories/")
    from django.contrib.auth.models import AnonymousUser

    request.user = AnonymousUser()
    response = views.bad_request(request, Exception())
    assert response.status_code == 400
    assert "<h1>That request could not be read</h1>" in response.content.decode()


# --- 500 --------------------------------------------------------------------------------------


def _boom(request):
    raise RuntimeError("boom")


@pytest.fixture
def failing_urls(settings):
    """The project's URLs plus a page and an API path whose views raise."""
    module = types.ModuleType("tests_error_pages_urls")
    module.urlpatterns = [
        path("boom/", _boom),
        path("api/v1/boom", _boom),
        path("", include("config.urls")),
    ]
    module.handler500 = "config.views.server_error"
    sys.modules[module.__name__] = module
    settings.ROOT_URLCONF = module.__name__
    yield
    del sys.modules[module.__name__]


def test_it_answers_the_styled_500_for_a_page_that_fails(page, failing_urls):
    page.raise_request_exception = False
    assert_styled_page(page.get("/boom/"), 500, "Something went wrong on our side")


def test_it_keeps_problem_json_for_an_api_500(client, db, failing_urls):
    client.raise_request_exception = False
    assert_problem(client.get("/api/v1/boom"), 500, "server_error")


def test_it_renders_the_500_page_without_a_database_or_a_request_context():
    """No `db` fixture: any database access here would fail the test. Nothing of the request
    reaches the template (no user, no session): the page offers every way back, sign-in too."""
    request = RequestFactory().get("/memories/")
    response = views.server_error(request)
    html = assert_styled_page(response, 500, "Something went wrong on our side")
    assert 'href="/login/">Sign in</a>' in html
    assert "request-id" not in html


def test_it_shows_the_request_id_on_the_500_page_when_one_is_known():
    request = RequestFactory().get("/memories/")
    request.request_id = "3f2a9c1e-0000-4000-8000-000000000001"
    html = views.server_error(request).content.decode()
    assert '<code class="request-id">3f2a9c1e-0000-4000-8000-000000000001</code>' in html


def test_it_still_answers_a_page_when_the_500_page_cannot_render(monkeypatch):
    def broken(name):
        raise RuntimeError("template storage is down")

    monkeypatch.setattr(error_pages.loader, "get_template", broken)
    response = views.server_error(RequestFactory().get("/memories/"))
    assert response.status_code == 500
    assert "<h1>Something went wrong on our side</h1>" in response.content.decode()
