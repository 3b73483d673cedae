"""The serving configuration is in the repository: `gunicorn.conf.py`, which
gunicorn reads from the working directory by itself, sets the workers from the core count
(`WEB_CONCURRENCY` overrides), loads the app once in the master before forking
(`preload_app`), closes database connections and freezes the collector there, and keeps
idle connections alive."""

from __future__ import annotations

import gc
import os
import runpy
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import children

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PORT = 8431


def config(**env) -> dict:
    saved = {k: os.environ.get(k) for k in ("WEB_CONCURRENCY", "PROMETHEUS_MULTIPROC_DIR", *env)}
    try:
        os.environ.pop("WEB_CONCURRENCY", None)
        os.environ.update(env)
        return runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def cores() -> int:
    return len(os.sched_getaffinity(0))


def test_it_takes_the_workers_from_the_core_count_unless_told():
    assert config()["workers"] == 2 * cores() + 1
    assert config(WEB_CONCURRENCY="3")["workers"] == 3


def test_it_preloads_the_app_and_keeps_connections_alive():
    settings = config()
    assert settings["preload_app"] is True
    # gthread: keep-alive, and (SPEC §12 O6) more than one thread, so one slow request
    # cannot hold the worker that /healthz needs.
    assert settings["worker_class"] == "gthread" and settings["threads"] > 1
    assert config(GUNICORN_THREADS="2")["threads"] == 2
    assert settings["keepalive"] >= 2


def test_it_imports_the_mcp_sdk_in_the_master_not_with_the_urls(tmp_path):
    """Loading the URLs (each management command, `runserver`, a worker's first request) does
    not import the MCP SDK behind `/mcp`, which takes about a second; gunicorn's master
    imports it, with the URLs, before it forks (`when_ready`), so the workers share it."""
    code = (
        "import sys, django\n"
        "django.setup()\n"
        "from django.urls import get_resolver\n"
        "get_resolver().url_patterns\n"
        "print('mcp' in sys.modules, 'agents.transport' in sys.modules)\n"
        "import runpy\n"
        "runpy.run_path('gunicorn.conf.py')['_import_what_requests_import']()\n"
        "print('mcp' in sys.modules, 'agents.transport' in sys.modules)\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["False False", "True True"]


def test_it_closes_the_masters_connections_and_freezes_what_it_loaded(monkeypatch):
    from django.db import connections

    closed = []
    monkeypatch.setattr(connections, "close_all", lambda: closed.append(True))
    settings = config()
    gc.unfreeze()
    try:
        settings["when_ready"](None)
        assert gc.get_freeze_count() > 0 and closed == [True]
    finally:
        gc.unfreeze()
    settings["pre_fork"](None, None)  # a worker forked later inherits no connection either
    assert closed == [True, True]


@pytest.mark.parametrize("concurrency", [None, "2"], ids=["core count", "WEB_CONCURRENCY"])
def test_it_serves_through_gunicorn_with_the_config_file(concurrency, tmp_path):
    expected = int(concurrency) if concurrency else 2 * cores() + 1
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("WEB_CONCURRENCY", "PROMETHEUS_MULTIPROC_DIR")
    }
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "DJANGO_DEBUG": "false",
            "SECRET_KEY": "gunicorn-config-" + "k" * 40,
            "ALLOWED_HOSTS": "127.0.0.1",
        }
    )
    if concurrency:
        env["WEB_CONCURRENCY"] = concurrency
    port = PORT + (1 if concurrency else 0)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline, body, workers = time.monotonic() + 60, None, []
            while time.monotonic() < deadline and (body is None or len(workers) < expected):
                assert proc.poll() is None, "gunicorn exited"
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                        body = r.read()
                except OSError:
                    pass
                workers = children(proc.pid)
                time.sleep(0.2)
            assert body == b'{"status": "ok"}'
            assert len(workers) == expected
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        log.seek(0)
        text = log.read().decode()
    assert "gthread" in text, text


from tests.ops.test_cache_breaker import frozen_redis  # noqa: E402, F401  (a fixture)


def test_it_answers_health_while_one_request_waits_on_a_dependency(frozen_redis, tmp_path):  # noqa: F811
    """SPEC §12 O6: one worker, its threads: while one request waits on a frozen cache (here
    with a 3 s timeout, to make the wait visible), /healthz on the same worker answers, and
    the waiting request then answers 200 too (the throttle counts in the process)."""
    import threading

    db = tmp_path / "db.sqlite3"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("WEB_CONCURRENCY", "PROMETHEUS_MULTIPROC_DIR", "GUNICORN_THREADS")
    }
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{db}",
            "DJANGO_DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECRET_KEY": "gunicorn-config-" + "k" * 40,
            "CACHE_URL": frozen_redis,
            "CACHE_SOCKET_TIMEOUT": "3",
            "CACHE_CONNECT_TIMEOUT": "3",
            "WEB_CONCURRENCY": "1",
        }
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run(
        [*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=180
    )
    made = subprocess.run(
        [*manage, "create_api_token", "slow"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    token = made.stdout.strip().splitlines()[-1]
    port = PORT + 2
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                        break
                except OSError:
                    time.sleep(0.2)
            slow: list[int] = []

            def waiting_request():
                req = urllib.request.Request(
                    f"http://127.0.0.1:{port}/api/v1/policy/capabilities",
                    headers={"Authorization": f"Bearer {token}"},
                )
                with urllib.request.urlopen(req, timeout=30) as r:
                    slow.append(r.status)

            thread = threading.Thread(target=waiting_request)
            thread.start()
            time.sleep(0.5)  # it is waiting on the frozen cache now
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
                assert r.status == 200
            assert thread.is_alive() and not slow  # health answered while it waited
            thread.join(timeout=30)
            assert slow == [200]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
