"""SPEC §10: every error is RFC 9457 problem details with a stable code."""

import pytest

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
