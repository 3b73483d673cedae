"""SPEC §10: every error is RFC 9457 problem details with a stable code."""

import pytest

from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def test_it_answers_an_unknown_api_path_with_a_problem(api):
    response = api.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "not_found"


def test_it_refuses_a_request_without_a_token(client):
    response = client.get("/api/v1/policy/capabilities")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "unauthenticated"


def test_it_serves_the_schema_and_docs_without_a_cdn(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "cdn" not in html.lower()
    assert "/static/drf_spectacular_sidecar/" in html


# --- one shape: the problems answered outside the API's views -----------------------------------
# The headers every API answer gets on its way out (security, size, request id): a problem
# answered before or outside a view carries them as one a view raises does.
EVERY_ANSWERS_HEADERS = {
    "Content-Type",
    "Content-Length",
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Cross-Origin-Opener-Policy",
    "X-Request-ID",
}


def test_it_answers_a_views_own_404_with_every_answers_headers(api):
    """The reference: a well-formed id that names nothing, answered by the view (C3)."""
    response = api.get("/api/v1/memories/12345678-1234-1234-1234-123456789012")
    assert assert_problem(response, 404, "not_found")["detail"] == "No such memory."
    assert EVERY_ANSWERS_HEADERS <= set(response.headers)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/memories/not-a-uuid",
        "/api/v1/memories/not-a-uuid/forget",
        "/api/v1/tombstones/12345",
        "/api/v1/turns/not-a-uuid",
        "/api/v1/conversations/not-a-uuid/messages",
    ],
)
def test_it_answers_a_malformed_id_with_the_one_problem_shape(api, path):
    """§10: a malformed id matches no route; its 404 is the problem every 404 is."""
    response = api.get(path)
    assert assert_problem(response, 404, "not_found")["detail"] == "No such resource."
    assert EVERY_ANSWERS_HEADERS <= set(response.headers)


def test_it_answers_an_oversized_body_413_with_the_one_problem_shape(api, settings):
    """§10: a body over the limit is refused before it is read, as `payload_too_large`."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.post("/api/v1/memory/remember", data="x" * 1001, content_type="application/json")
    body = assert_problem(response, 413, "payload_too_large")
    assert body["detail"] == "The body is larger than 1000 bytes."
    assert EVERY_ANSWERS_HEADERS <= set(response.headers)


def test_it_answers_an_unreadable_content_length_with_the_one_problem_shape(api):
    response = api.generic(
        "POST",
        "/api/v1/memory/remember",
        data="{}",
        content_type="application/json",
        CONTENT_LENGTH="two",
    )
    assert assert_problem(response, 400, "validation_error")["detail"] == (
        "Invalid Content-Length."
    )
    assert EVERY_ANSWERS_HEADERS <= set(response.headers)


def test_it_answers_a_malformed_json_body_with_the_registrys_title(api):
    """§10: a body that is not JSON is `validation_error`, titled as every one is."""
    response = api.post("/api/v1/memory/remember", data="{bad", content_type="application/json")
    assert assert_problem(response, 400, "validation_error")["title"] == "Invalid input"


def test_it_answers_an_unknown_token_with_the_registrys_title(client):
    response = client.get("/api/v1/characters", HTTP_AUTHORIZATION="Bearer not-a-token")
    assert assert_problem(response, 401, "unauthenticated")["title"] == "Authentication required"


def test_it_answers_the_metrics_without_a_token_with_the_one_problem_shape(client):
    """O3: `/metrics` is served to a Bearer API token only."""
    response = client.get("/metrics")
    body = assert_problem(response, 401, "unauthenticated")
    assert body["detail"] == "A Bearer API token is required."
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
