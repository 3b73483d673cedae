"""SPEC §12 O3: `/metrics` serves Prometheus text to a Bearer API token only: request counts
and latency histograms per route and status, resolve candidates, decisions by effect, turns,
replies replayed, blocked writes by reason; no label holds a user, a key's free part or any
text."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.django_db


def scrape(client, token) -> tuple[str, dict]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return text, samples


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.parametrize("header", [None, "Bearer nope", "Token abc", "Basic dXNlcjpwYXNz"])
def test_it_serves_metrics_to_a_token_only(client, header):
    kwargs = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/metrics", **kwargs)
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert "companion_" not in response.content.decode()


def test_it_refuses_a_revoked_token(client):
    from django.utils import timezone

    from config.models import ApiToken

    token, raw = ApiToken.issue("old")
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401


def test_it_counts_requests_and_the_domain_events_without_private_labels(api, client, api_token):
    _, before = scrape(client, api_token)
    ref = "zebrina-owner"
    api.put(f"/api/v1/users/{ref}", {}, format="json")
    api.put("/api/v1/characters/rowan", {"name": "Rowan"}, format="json")
    conv = api.post(
        "/api/v1/conversations", {"user": ref, "character": "rowan"}, format="json"
    ).json()["id"]
    turn = api.post(
        f"/api/v1/conversations/{conv}/turns",
        {"turn_key": "t1", "content": "Zebrina works at Quokkacorp."},
        format="json",
    ).json()
    api.post(
        f"/api/v1/conversations/{conv}/turns",
        {"turn_key": "t1", "content": "Zebrina works at Quokkacorp."},
        format="json",
    )  # replayed
    api.post(f"/api/v1/turns/{turn['id']}/reply", {"content": "Noted, Zebrina."}, format="json")
    api.post(
        f"/api/v1/turns/{turn['id']}/reply", {"content": "Noted, Zebrina."}, format="json"
    )  # replayed
    memory = turn["extracted"][0]["memory"]
    assert memory["key"] == "people.zebrina.works_at"
    api.post(f"/api/v1/memories/{memory['id']}/forget", {}, format="json")
    blocked = api.post(
        "/api/v1/memories",
        {
            "user": ref,
            "key": "people.zebrina.works_at",
            "value": "Quokkacorp",
            "scope": {"kind": "user"},
            "valid_from": "2020-01-01T00:00:00Z",
        },
        format="json",
    )
    assert blocked.json()["outcome"] == "blocked"
    ctx = {"user": ref, "character": "rowan", "conversation": conv}
    api.post("/api/v1/memory/resolve", {"context": ctx}, format="json")
    api.post(
        "/api/v1/policy/decide",
        {"context": ctx, "capability": "tone.playful", "requested_by": "user"},
        format="json",
    )
    api.get(f"/api/v1/memories/{memory['id']}")
    api.get("/api/v1/memories/not-a-uuid")

    text, after = scrape(client, api_token)

    def grew(name, by=1, **labels):
        assert value(after, name, **labels) - value(before, name, **labels) == by, (name, labels)

    grew("companion_turns_total", outcome="created")
    grew("companion_turns_total", outcome="replayed")
    grew("companion_replies_total", replayed="false")
    grew("companion_replies_total", replayed="true")
    grew("companion_memory_writes_blocked_total", reason="forgotten")
    grew("companion_policy_decisions_total", effect="ask", reason="no-applicable-rule")
    assert value(after, "companion_resolve_candidates_count") > value(
        before, "companion_resolve_candidates_count"
    )
    route = "api/v1/memories/<uuid:memory_id>"
    grew("companion_http_requests_total", route=route, method="GET", status="200")
    grew("companion_http_request_duration_seconds_count", route=route, method="GET", status="200")
    assert (
        value(
            after,
            "companion_http_request_duration_seconds_bucket",
            route=route,
            method="GET",
            status="200",
            le="+Inf",
        )
        >= 1
    )
    assert any(
        name == "companion_http_requests_total" and dict(labels).get("status") == "404"
        for name, labels in after
    )
    # No label holds a user, a key's free part, a value or message text, or a path.
    for secret in ("zebrina", "Zebrina", "Quokkacorp", ref, conv, memory["id"], "not-a-uuid"):
        assert secret not in text


def test_it_labels_an_unknown_method_as_other(client, api_token):
    client.generic("BREW", "/healthz")
    _, samples = scrape(client, api_token)
    assert not any(dict(labels).get("method") == "BREW" for _, labels in samples)
    assert any(dict(labels).get("method") == "other" for _, labels in samples)
