"""SPEC §12 O1: every response carries X-Request-ID (a valid incoming one is kept); every
unhandled exception is logged once on `companion.errors` at ERROR with its type, the route and
the request id — never the body — and the client gets the problem+json 500 with that
`request_id`. With DJANGO_DEBUG on, API paths still answer problem+json."""

import logging
import uuid

import pytest
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

from tests.helpers import Collect, assert_problem

pytestmark = pytest.mark.django_db

SECRET_BODY = "the-secret-body-text-Zebrina"
SECRET_MESSAGE = "message-quoting-input-Quokka"


class BoomApi(APIView):
    def post(self, request):
        if request.data is not None:  # the body was read
            raise RuntimeError(SECRET_MESSAGE)
        return Response(status=204)


def boom_page(request):
    raise KeyError(SECRET_MESSAGE)


def missing_page(request):
    from django.http import Http404

    raise Http404("no such thing")


urlpatterns = [
    path("api/v1/test-boom", BoomApi.as_view(), name="test-boom"),
    path("test-boom-page", boom_page, name="test-boom-page"),
    path("test-missing-page", missing_page, name="test-missing-page"),
    path("", include("config.urls")),
]


@pytest.fixture
def records(settings):
    settings.ROOT_URLCONF = __name__
    handler = Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler.records
    root.removeHandler(handler)


def text_of(record) -> str:
    return (
        record.getMessage()
        + " "
        + repr(record.args)
        + " "
        + repr(record.exc_info)
        + " "
        + repr(record.__dict__)
    )


def test_it_logs_an_unhandled_exception_once_and_answers_with_the_request_id(api, records):
    response = api.post("/api/v1/test-boom", {"note": SECRET_BODY}, format="json")
    body = assert_problem(response, 500, "server_error")  # the one shape of every problem
    request_id = response["X-Request-ID"]
    assert body["code"] == "server_error" and body["request_id"] == request_id
    uuid.UUID(request_id)
    errors = [r for r in records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]  # once: Django does not log it again
    record = errors[0]
    assert record.name == "companion.errors"
    message = record.getMessage()
    assert "type=builtins.RuntimeError" in message
    assert "route=test-boom" in message
    assert f"request_id={request_id}" in message
    assert "tests/ops/test_errors.py" in message and ":post" in message  # where it was raised
    for record in records:
        assert SECRET_BODY not in text_of(record)
        assert SECRET_MESSAGE not in text_of(record)


def test_it_keeps_a_valid_incoming_request_id_in_the_log_and_the_answer(api, records):
    response = api.post("/api/v1/test-boom", {}, format="json", HTTP_X_REQUEST_ID="lb-1234.abc")
    assert (
        response["X-Request-ID"] == "lb-1234.abc" and response.json()["request_id"] == "lb-1234.abc"
    )
    assert (
        "request_id=lb-1234.abc"
        in next(r for r in records if r.levelno >= logging.ERROR).getMessage()
    )


@pytest.mark.parametrize("incoming", ["", "has space", "x" * 129, "<script>", "a\u00e9b"])
def test_it_replaces_an_invalid_incoming_request_id(client, incoming):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=incoming)
    assert response["X-Request-ID"] != incoming
    uuid.UUID(response["X-Request-ID"])


@pytest.mark.parametrize(
    "url",
    [
        "/healthz",
        "/login/",
        "/api/v1/policy/capabilities",
        "/api/v1/nowhere",
        "/memories/",
        "/api/schema/",
    ],
)
def test_it_puts_a_request_id_on_every_response(client, url):
    assert client.get(url)["X-Request-ID"]


def test_it_answers_a_page_error_with_a_page_that_knows_the_request_id(client, records):
    client.raise_request_exception = False
    response = client.get("/test-boom-page")
    assert response.status_code == 500
    assert "html" in response["Content-Type"]
    request_id = response["X-Request-ID"]
    assert request_id in response.content.decode()
    errors = [r for r in records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "type=builtins.KeyError" in errors[0].getMessage()
    assert "route=test-boom-page" in errors[0].getMessage()


def test_it_puts_the_request_id_on_the_project_log_lines(api, records, capsys):
    """The console handler's format carries the request id of the request being served."""
    from config.observability import RequestIdFilter

    api.put("/api/v1/users/sam", {}, format="json")
    api.put("/api/v1/characters/rowan", {"name": "Rowan"}, format="json")
    response = api.post(
        "/api/v1/memories",
        {"user": "sam", "key": "pet.name", "value": "Rex", "scope": {"kind": "user"}},
        format="json",
    )
    line = next(r for r in records if r.getMessage().startswith("memory_assert"))
    RequestIdFilter().filter(line)
    assert line.request_id == response["X-Request-ID"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/no-such-thing",
        "/api/v1/memories/not-a-uuid",
        "/api/v1/turns/123/prompt-plan",
        "/api/v1/memories/%00",
    ],
)
def test_it_answers_unknown_api_paths_with_a_problem_in_debug_mode(api, settings, url):
    """Issue: with DJANGO_DEBUG=true Django answered these with its HTML page."""
    settings.DEBUG = True
    for method in ("get", "post", "delete"):
        response = getattr(api, method)(url)
        assert response.status_code == 404, (method, url)
        assert response["Content-Type"] == "application/problem+json"
        assert response.json()["code"] == "not_found"


def test_it_answers_an_api_error_with_a_problem_in_debug_mode(api, records, settings):
    settings.DEBUG = True
    response = api.post("/api/v1/test-boom", {}, format="json")
    assert response.status_code == 500 and response["Content-Type"] == "application/problem+json"
    assert response.json()["request_id"] == response["X-Request-ID"]


def test_it_leaves_a_not_found_to_django_and_logs_no_error(client, records):
    """A 404 (or 403, 400) raised by a view is an answer, not a failure."""
    assert client.get("/test-missing-page").status_code == 404
    assert not [r for r in records if r.levelno >= logging.ERROR]
