"""Access control: every API route refuses (a) no credentials, (b) a revoked token
and (c) a browser session with 401 and no data in the body; runtime tokens cannot use the
pages."""

import uuid

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "delete")


def api_routes():
    """Every API route and method, taken from the URLconf itself (so a new route is covered)."""
    out = []

    def walk(patterns, prefix):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern) and (prefix + str(p.pattern)).startswith("api/v1/"):
                view = getattr(p.callback, "view_class", None) or getattr(p.callback, "cls", None)
                for method in METHODS:
                    if view is not None and hasattr(view, method):
                        out.append((method, "/" + prefix + str(p.pattern)))

    walk(get_resolver().url_patterns, "")
    return sorted(set(out))


def concrete(route: str) -> str:
    path = route
    for converter in ("<uuid:", "<str:", "<slug:"):
        while converter in path:
            start = path.index(converter)
            end = path.index(">", start)
            path = path[:start] + str(uuid.uuid4()) + path[end + 1 :]
    return path


ROUTES = api_routes()


def test_it_knows_every_api_route():
    assert len(ROUTES) >= 30
    assert ("post", "/api/v1/memory/resolve") in ROUTES


@pytest.fixture
def victim(db):
    """A user with data, so a leak would have something to show."""
    from conversations.scopes import Scope
    from conversations.services import user_put
    from memory.services import memory_assert

    user, _ = user_put(ref="victim")
    memory_assert(user=user, key="basil_plant.name", value="Marlowe", scope=Scope("user"))
    return user


def _assert_refused(response):
    assert response.status_code == 401, (response.status_code, response.content[:200])
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert set(body) <= {"type", "title", "status", "detail", "code"}
    assert "Marlowe" not in response.content.decode() and "victim" not in response.content.decode()


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_it_refuses_a_request_without_credentials(client, victim, method, route):
    _assert_refused(getattr(client, method)(concrete(route), content_type="application/json"))


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_it_refuses_a_revoked_token(client, victim, method, route):
    from config.models import ApiToken

    token, raw = ApiToken.issue("old")
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    response = getattr(client, method)(
        concrete(route), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}"
    )
    _assert_refused(response)


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_it_refuses_a_browser_session_even_of_a_superuser(client, victim, method, route):
    """Sessions never read or write through the API (SPEC §10)."""
    from tests.factories import UserFactory

    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    _assert_refused(getattr(client, method)(concrete(route), content_type="application/json"))


def test_it_refuses_the_victims_data_by_path_without_a_token(client, victim):
    for path in (
        "/api/v1/users/victim/export",
        "/api/v1/memories?user=victim",
        "/api/v1/tombstones?user=victim",
    ):
        _assert_refused(client.get(path))


def test_it_does_not_let_a_runtime_token_use_the_pages(client, victim, api_token):
    """Pages use session login only: a Bearer token gets the sign-in page, not data."""
    for path in ("/memories/", "/data/export.json", "/boundaries/", "/conversations/"):
        response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {api_token}")
        assert response.status_code == 302, (path, response.status_code)
        assert response["Location"].startswith("/login/?next=")
        assert b"Marlowe" not in response.content
