"""Static files are served in every mode: WhiteNoise serves what
`collectstatic` gathered — the pages' stylesheet and the admin's — with DEBUG off, from
`runserver` (what `make run` starts; the browser tests drive it) and from gunicorn (the deploy
steps), with content-hashed names cached for a year and gzip-compressed copies."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.test.utils import override_settings

from config import settings as project_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """The project's own storage (not the suite's plain one), collected once into a fresh
    STATIC_ROOT."""
    root = tmp_path_factory.mktemp("collected") / "static"
    with override_settings(STORAGES=project_settings.STORAGES, STATIC_ROOT=root, DEBUG=False):
        call_command("collectstatic", interactive=False, verbosity=0)
        yield root


def test_it_uses_whitenoise_with_hashed_compressed_files():
    from whitenoise.storage import CompressedManifestStaticFilesStorage

    from config.static import StaticFilesStorage

    assert project_settings.STORAGES["staticfiles"]["BACKEND"] == "config.static.StaticFilesStorage"
    assert issubclass(StaticFilesStorage, CompressedManifestStaticFilesStorage)
    middleware = project_settings.MIDDLEWARE
    # Right after SecurityMiddleware, before anything that would do work for a static file.
    assert (
        middleware.index("whitenoise.middleware.WhiteNoiseMiddleware")
        == middleware.index("django.middleware.security.SecurityMiddleware") + 1
    )
    assert project_settings.INSTALLED_APPS.index(
        "whitenoise.runserver_nostatic"
    ) < project_settings.INSTALLED_APPS.index("django.contrib.staticfiles")


@pytest.mark.django_db
def test_it_styles_a_page_with_debug_off_even_when_nothing_was_collected(tmp_path):
    """`runserver` or gunicorn started without `collectstatic` (an empty STATIC_ROOT): the
    page renders (it was a 500) and links the plain stylesheet, which WhiteNoise serves from
    the app's static folder."""
    with override_settings(
        STORAGES=project_settings.STORAGES, STATIC_ROOT=tmp_path / "empty", DEBUG=False
    ):
        client = Client()
        page = client.get("/login/")
        assert page.status_code == 200
        [href] = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page.content.decode())
        assert href == "/static/css/pages.css"
        response = client.get(href)
        assert response.status_code == 200 and response["Content-Type"].startswith("text/css")
        assert b".visually-hidden" in b"".join(response.streaming_content)


@pytest.mark.django_db
def test_it_serves_the_pages_stylesheet_with_debug_off(collected):
    client = Client()  # a new handler: WhiteNoise reads the STATIC_ROOT above
    page = client.get("/login/").content.decode()
    [href] = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
    assert re.fullmatch(r"/static/css/pages\.[0-9a-f]{12}\.css", href), href

    response = client.get(href)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/css")
    assert (
        "max-age=315360000" in response["Cache-Control"]
        and "immutable" in response["Cache-Control"]
    )
    assert b".visually-hidden" in b"".join(response.streaming_content)

    gzipped = client.get(href, HTTP_ACCEPT_ENCODING="gzip")
    assert (gzipped.status_code, gzipped["Content-Encoding"]) == (200, "gzip")


@pytest.mark.django_db
def test_it_serves_the_admins_static_files_with_debug_off(collected):
    client = Client()
    page = client.get("/admin/login/").content.decode()
    hrefs = re.findall(r'href="(/static/admin/css/[^"]+\.css)"', page)
    assert hrefs
    for href in hrefs:
        response = client.get(href)
        assert (response.status_code, response["Content-Type"].split(";")[0]) == (
            200,
            "text/css",
        ), href


def test_it_keeps_screen_reader_text_off_screen_without_the_stylesheet(client, db):
    """Even if the stylesheet never arrives, `.visually-hidden` text stays off screen: the base
    template carries the few rules that hide it."""
    page = client.get("/login/").content.decode()
    head = page.split("</head>")[0]
    style = re.search(r"<style>(.*?)</style>", head, re.S)
    assert style and ".visually-hidden{position:absolute!important" in style.group(1)
    assert head.index("<style>") < head.index('rel="stylesheet"')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_it_serves_the_stylesheet_and_the_admins_through_gunicorn(tmp_path):
    """The deploy steps: collectstatic, then gunicorn with DEBUG off."""
    env = {
        **os.environ,
        "STATIC_ROOT": str(tmp_path / "static"),
        "DJANGO_DEBUG": "false",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
    }
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
    )
    manifest = json.loads((tmp_path / "static" / "staticfiles.json").read_text())["paths"]
    port = _free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "config.wsgi",
            "--workers",
            "1",
            "--bind",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for name in ("css/pages.css", "admin/css/base.css"):
            url = f"http://127.0.0.1:{port}/static/{manifest[name]}"
            for _ in range(100):
                try:
                    with urllib.request.urlopen(url, timeout=5) as response:
                        assert response.status == 200
                        assert response.headers["Content-Type"].startswith("text/css")
                        break
                except (ConnectionError, urllib.error.URLError):
                    time.sleep(0.1)
            else:
                pytest.fail(f"gunicorn did not serve {url}")
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_it_serves_the_sites_icon_at_the_root():
    """Browsers ask every site for `/favicon.ico`: it is a real ICO file (WHITENOISE_ROOT), and
    every page names it."""
    response = Client().get("/favicon.ico")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body[:4] == b"\x00\x00\x01\x00" and response["Content-Type"] == "image/x-icon"
    login = Client().get("/login/").content.decode()
    assert '<link rel="icon" href="/favicon.ico"' in login
