"""Production settings, login brute-force protection, CSP, throttles and body limits."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_it_passes_the_deployment_checks_in_production():
    """`DJANGO_ENV=production` passes `manage.py check --deploy` with no warnings."""
    # (Browser tests set DJANGO_ALLOW_ASYNC_UNSAFE for Playwright; a deployment never does.)
    base = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {
        **base,
        "DJANGO_ENV": "production",
        "DJANGO_DEBUG": "false",
        "SECRET_KEY": "k" * 20 + "-a-long-random-production-secret-" + "9" * 20,
        "ALLOWED_HOSTS": "memory.example.org",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_it_requires_a_secret_key_in_production():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env.update({"DJANGO_ENV": "production", "DJANGO_DEBUG": "false"})
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


@pytest.mark.django_db
def test_it_locks_out_a_brute_force_sign_in(client):
    from tests.factories import UserFactory

    UserFactory(username="target")
    codes = [
        client.post("/login/", {"username": "target", "password": "wrong"}).status_code
        for _ in range(5)
    ]
    assert codes == [200, 200, 200, 200, 429]  # the fifth failure locks the pair out
    r = client.post("/login/", {"username": "target", "password": "correct horse battery"})
    assert r.status_code == 429
    assert b"Too many sign-in attempts" in r.content


@pytest.mark.django_db
def test_it_sends_a_content_security_policy(client):
    r = client.get("/login/")
    policy = r["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy


@pytest.mark.django_db
def test_it_refuses_an_oversized_body_with_413(api):
    r = api.post(
        "/api/v1/memories",
        data=b"{" + b" " * (3 * 1024 * 1024) + b"}",
        content_type="application/json",
    )
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large"


@pytest.mark.django_db
def test_it_throttles_per_end_user_and_per_token(api, settings, monkeypatch):
    """SPEC §12 O7: the scope's rate per user the request acts for; the token's guard for the
    rest (config.throttle; more in tests/ops/test_throttle.py)."""
    from config.throttle import RuntimeThrottle
    from tests.factories import UserFactory

    UserFactory(username="ana")
    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {"runtime": "3/min", "token": "5/min"})
    codes = [api.get("/api/v1/memories?user=ana").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    r = api.get("/api/v1/memories?user=ana")
    assert r.json()["code"] == "throttled" and "Retry-After" in r
    assert api.get("/api/v1/policy/capabilities").status_code == 429  # the token's 6th
