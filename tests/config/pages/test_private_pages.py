"""What every page shares: sign-in, only the signed-in user's data, no-store, CSRF,
a skip link; and the sign-in and sign-out pages themselves."""

import re

import pytest
from django.test import Client
from django.urls import URLResolver, reverse

from agents.services import connection_create
from config import urls
from memory.forgetting import memory_forget
from memory.models import MemoryRecord, Tombstone
from policy.services import rule_create
from tests.helpers import live, text

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def objects(say, sam, conv):
    """One object of each kind the page URLs name, all sam's."""
    say("My dog's name is Rex. I live in Boston.")
    memory = live("dog.name", sam)
    tombstone = memory_forget(record_id=live("user.lives_in", sam).pk, user=sam)
    rule = rule_create(
        user=sam,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    return {
        "memory_id": memory.pk,
        "tombstone_id": tombstone.pk,
        "rule_id": rule.pk,
        "conversation_id": conv.pk,
        "connection_id": connection_create(user=sam, name="Laptop").connection.pk,
    }


PAGE_NAMESPACES = {"memory", "policy", "conversations", "data", "agents"}


def page_routes():
    """(namespace:name, the kwargs it needs) for every route of the end user's pages."""
    for include in urls.urlpatterns:
        if not isinstance(include, URLResolver) or include.namespace not in PAGE_NAMESPACES:
            continue
        for pattern in include.url_patterns:
            yield f"{include.namespace}:{pattern.name}", sorted(pattern.pattern.converters)


GET_PAGES = [
    "memory:list",
    "memory:forgotten",
    "memory:correct",
    "memory:forget",
    "memory:history",
    "memory:no-longer-true",
    "policy:boundaries",
    "conversations:list",
    "conversations:detail",
    "conversations:delete",
    "data:index",
    "data:export",
    "data:forget-everything",
    "data:delete-account",
    "agents:connections",
]
POST_ONLY = [
    "memory:confirm",
    "memory:retract",
    "memory:restore",
    "memory:learn-again",
    "memory:filter",
    "memory:forget-selected",
    "data:time-zone",
    "memory:switches",
    "policy:set",
    "policy:revoke",
    "agents:revoke",
]


def url(name, objects):
    kwargs = {k: v for k, v in objects.items() if k in dict(page_routes())[name]}
    return reverse(name, kwargs=kwargs)


def test_it_covers_every_page_route_in_the_lists_below():
    assert {name for name, _ in page_routes()} == set(GET_PAGES) | set(POST_ONLY)


@pytest.mark.parametrize("name", GET_PAGES + POST_ONLY)
def test_it_needs_a_sign_in_for_every_page_and_never_caches_one(client, objects, name):
    target = url(name, objects)
    r = client.post(target) if name in POST_ONLY else client.get(target)
    assert r.status_code == 302
    assert r["Location"].startswith("/login/?next=")
    assert "no-store" in r["Cache-Control"]
    assert MemoryRecord.objects.filter(status="forgotten").count() == 1  # nothing happened


@pytest.mark.parametrize("name", GET_PAGES)
def test_it_keeps_every_page_private_and_not_stored(page, objects, name):
    r = page.get(url(name, objects))
    assert r.status_code == 200, r.content[:500]
    cache_control = {part.strip() for part in r["Cache-Control"].split(",")}
    assert {"no-store", "no-cache", "private"} <= cache_control
    if name != "data:export":
        html = r.content.decode()
        assert '<a class="skip-link" href="#main">Skip to main content</a>' in html
        assert '<main id="main"' in html


@pytest.mark.parametrize(
    "name",
    [
        "memory:forgotten",
        "memory:forget",
        "memory:correct",
        "conversations:delete",
        "data:delete-account",
        "data:forget-everything",
        "policy:boundaries",
        "agents:connections",
    ],
)
def test_it_gives_every_form_a_csrf_token(page, objects, name):
    html = page.get(url(name, objects)).content.decode()
    forms = re.findall(r"<form[^>]*>", html)
    posts = [f for f in forms if 'method="post"' in f]
    assert len(posts) >= 2  # the page's own form(s) and "sign out"
    assert len(posts) == html.count('name="csrfmiddlewaretoken"')


def test_it_refuses_a_post_without_the_csrf_token_and_stores_nothing(sam, objects):
    client = Client(enforce_csrf_checks=True)
    client.force_login(sam)
    before = MemoryRecord.objects.count()

    r = client.post(url("memory:forget", objects), {"everywhere": "on"})
    r2 = client.post(url("memory:correct", objects), {"value": "Max"})

    assert (r.status_code, r2.status_code) == (403, 403)
    assert MemoryRecord.objects.count() == before and Tombstone.objects.count() == 1
    assert live("dog.name", sam).value == "Rex"


def test_it_lets_a_post_with_the_csrf_token_through(sam, objects):
    client = Client(enforce_csrf_checks=True)
    client.force_login(sam)
    form = client.get(url("memory:correct", objects))
    token = form.context["csrf_token"]
    r = client.post(
        url("memory:correct", objects), {"value": "Max", "csrfmiddlewaretoken": str(token)}
    )
    assert r.status_code == 302
    assert live("dog.name", sam).value == "Max"


def test_it_sends_a_visitor_home_to_sign_in_and_a_user_to_their_memories(client, page):
    assert client.get("/")["Location"] == "/login/"
    assert page.get("/")["Location"] == "/memories/"


def test_it_signs_in_and_out(client, sam):
    form = client.get("/login/")
    html = form.content.decode()
    assert (
        '<label for="id_username">Username</label>' in html
        and '<label for="id_password">Password</label>' in html
    )
    assert "autofocus" in html

    wrong = client.post("/login/", {"username": "sam", "password": "nope"})
    assert wrong.status_code == 200 and "Could not sign you in" in text(wrong)

    r = client.post("/login/", {"username": "sam", "password": "correct horse battery"})
    assert r["Location"] == "/memories/"
    assert client.get("/memories/").status_code == 200

    out = client.post("/logout/")
    assert out["Location"] == "/login/"
    assert client.get("/memories/").status_code == 302


def test_it_returns_to_the_page_asked_for_after_sign_in(client, sam):
    r = client.post(
        "/login/?next=/boundaries/",
        {"username": "sam", "password": "correct horse battery", "next": "/boundaries/"},
    )
    assert r["Location"] == "/boundaries/"


def test_it_ignores_a_next_url_off_the_site(page, objects):
    r = page.post(url("memory:confirm", objects), {"next": "https://evil.example/"})
    assert r["Location"].split("#")[0] == "/memories/"


@pytest.mark.parametrize(
    "value",
    [
        "foo",
        "memories",
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "\\\\evil",
        "/memories/\r\nSet-Cookie: x=1",
        "/memories/\x00",
        "javascript:alert(1)",
        "",
    ],
)
@pytest.mark.parametrize("name", ["memory:confirm", "memory:retract", "policy:revoke"])
def test_it_falls_back_from_a_next_value_that_is_not_a_local_path_and_never_fails(
    page, objects, name, value
):
    """Any `next` form value is either a path on this site or ignored —
    never an open redirect and never a server error (a bare word like `foo` was a 500)."""
    fallback = "/boundaries/" if name.startswith("policy") else "/memories/"
    r = page.post(url(name, objects), {"next": value})
    assert r.status_code == 302
    # The memory actions land on the card they acted on: `#m-<id>`.
    assert r["Location"].split("#")[0] == fallback
    assert name.startswith("policy") or re.fullmatch(r"/memories/#m-[0-9a-f-]{36}", r["Location"])


def test_it_falls_back_from_a_next_value_with_bytes_that_are_not_text(page, objects):
    """A browser percent-encodes whatever it sends; bytes that are no UTF-8 (a lone surrogate's
    encoding, a stray continuation byte) decode to replacement characters, and the redirect
    still stays on this site."""
    for body in ["next=%2Fmemories%2F%ED%A0%80", "next=%2F%80%FF", "next=%ED%A0%80"]:
        r = page.post(
            url("memory:confirm", objects), body, content_type="application/x-www-form-urlencoded"
        )
        assert r.status_code == 302
        assert r["Location"].startswith("/") and not r["Location"].startswith("//")


def test_it_keeps_a_local_next_path_with_a_query_and_lands_on_the_card(page, sam, objects):
    """The page and filters of `next` are kept; its anchor becomes the acted-on card's."""
    r = page.post(url("memory:confirm", objects), {"next": "/memories/?page=2&sort=az#m-1"})
    assert r["Location"] == f"/memories/?page=2&sort=az#m-{live('dog.name', sam).pk}"


@pytest.mark.parametrize("username", ["x" * 151, "x" * 256, "x" * 5000, "a\x00b", "%ED%A0%80"])
def test_it_refuses_sign_in_with_an_impossible_username_with_the_normal_message(
    client, sam, username
):
    """An over-long (or unstorable) username is refused like a wrong
    password, before anyone is signed in, without a server error (on PostgreSQL a 256-character
    name was a 500 when the failed attempt was stored); signing in normally still works."""
    body = (
        f"username={username}&password=whatever"
        if "%" in username
        else {"username": username, "password": "whatever"}
    )
    r = (
        client.post("/login/", body, content_type="application/x-www-form-urlencoded")
        if "%" in username
        else client.post("/login/", body)
    )
    assert r.status_code == 200
    assert "Could not sign you in" in text(r)
    ok = client.post("/login/", {"username": "sam", "password": "correct horse battery"})
    assert ok["Location"] == "/memories/"
