"""The browser suite meets the product as a new user does.

- **The README's server.** `readme_server` starts the app exactly as the README says —
  `make run` (migrate, collectstatic, the demo data, `runserver`), with DEBUG off — on a free
  port and a throwaway SQLite file, once per test session. So the stylesheet is served the way
  a first start serves it (WhiteNoise), never by a test server's own static handler.
- **Data through the product's own doors.** `manage(...)` runs management commands against
  that server's database (`load_demo`, `create_support_user`, `create_api_token`); `api(...)`
  calls the runtime API with a Bearer token; pages are driven in the browser. No test reaches
  into the database directly.
- **Debian's Chromium** through Playwright (`executable_path`; nothing is downloaded), at 1280
  and 390 px: a test that takes the `width` fixture runs once per width.
- **Every page looked at.** `look(page, name)` asserts the stylesheet is applied (a computed
  style), that nothing is cut off sideways, that screen-reader-only text stays off screen,
  and runs axe-core (`axe-playwright-python`; any violation fails).
- **Screenshots for a reviewer**, with `SCREENSHOTS=1` (`make screenshots`): every page
  looked at, full-page, in `test-artifacts/screenshots/<name>-<width>.jpg`. They are not a
  check, and drawing them took 7% of two browser files' time (a paired run: 112 against
  118 s), so `make test` leaves them out.

To add a flow: take `readme_server`, `person` (a fresh user with the demo's world), `page`
(at `width`), `sign_in` and `look`; see test_pages_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTHS = {"desktop": 1280, "phone": 390}
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
TAKE_SCREENSHOTS = os.environ.get("SCREENSHOTS") == "1"  # `make screenshots`
REVEAL_SECONDS = 20  # how long a support reveal lasts on the README's server (SPEC S1)
START_TIMEOUT = 180  # seconds: a cold `make run` migrates, collects static files and loads the demo
# The pages' own background (static/css/pages.css, --wash): only the stylesheet sets it.
PAGES_BACKGROUND = "rgb(246, 248, 250)"


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)  # Chromium: started first in `make test`
            if CHROMIUM is None:
                item.add_marker(
                    pytest.mark.skip(
                        reason="no Chromium: neither /usr/bin/chromium nor `chromium` on PATH"
                    )
                )


# --- the README's server ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@dataclass
class ReadmeServer:
    """`make run` on `url`, with its environment (for management commands on its database)."""

    url: str
    env: dict
    log: Path
    demo_password: str
    _token: str = field(default="", repr=False)
    _runner: subprocess.Popen | None = field(default=None, repr=False)

    def manage(self, *args: str) -> str:
        """Run `manage.py ARGS` against this server's database; its standard output. The
        commands run in one process started for them (tests/browser/manage_runner.py), so
        Django starts once for all of them rather than once per command."""
        if self._runner is None:
            with self.log.with_name("manage.log").open("a") as log:
                self._runner = subprocess.Popen(
                    [sys.executable, "-m", "tests.browser.manage_runner"],
                    cwd=ROOT,
                    env=self.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                )
        self._runner.stdin.write(json.dumps(args) + "\n")
        self._runner.stdin.flush()
        ready, _, _ = select.select([self._runner.stdout], [], [], 120)
        line = self._runner.stdout.readline() if ready else ""
        assert line, f"manage.py {' '.join(args)} did not answer within 120 s (or ended)"
        result = json.loads(line)
        assert result["code"] == 0, (
            f"manage.py {' '.join(args)} failed:\n{result['stderr'][-3000:]}"
        )
        return result["stdout"]

    def close(self) -> None:
        """Stop the management commands' process."""
        if self._runner is not None:
            self._runner.stdin.close()
            try:
                self._runner.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._runner.kill()
            self._runner.stdout.close()
            self._runner = None

    def api(self, method: str, path: str, body=None):
        """The chat runtime's call: JSON over HTTP with a Bearer token (made once)."""
        if not self._token:
            self._token = self.manage("create_api_token", "browser-tests").strip().splitlines()[-1]
        request = urllib.request.Request(
            f"{self.url}/api/v1{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")


@pytest.fixture(scope="session")
def readme_server(tmp_path_factory):
    """`make run PORT=… DB=…` with DEBUG off, as the README starts the app; stopped (its whole
    process group) when the session ends."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("no `make` on PATH: the README's `make run` cannot be started")
    tmp = tmp_path_factory.mktemp("readme-server")
    port = _free_port()
    database = tmp / "db.sqlite3"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "DJANGO_ALLOW_ASYNC"))
    }
    env.update(
        {
            "DJANGO_DEBUG": "false",  # even if a developer's .env turns it on
            "STATIC_ROOT": str(tmp / "static"),  # never races a developer's own `make run`
            "DATABASE_URL": f"sqlite:///{database}",  # for `manage`; `make run DB=` sets the same
            # A support reveal (SPEC S1) lasts this long here, so a test can wait one out.
            "SUPPORT_REVEAL_SECONDS": str(REVEAL_SECONDS),
        }
    )
    log = tmp / "make-run.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [make, "run", f"PORT={port}", f"DB={database}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"`make run` exited with {process.returncode}:\n{log.read_text()[-3000:]}"
                )
            try:
                if _get(url + "/login/", timeout=2) == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"`make run` did not answer within {START_TIMEOUT} s:\n"
                    f"{log.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        found = re.search(
            r"Sign in at (\S+)/login/ as 'demo' with password '([^']+)'", log.read_text()
        )
        assert found, "make run did not print the demo user's password"
        assert found.group(1) == url, f"make run printed {found.group(1)}, but serves {url}"
        server = ReadmeServer(url=url, env=env, log=log, demo_password=found.group(2))
        try:
            yield server
        finally:
            server.close()
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(process.pid, signal.SIGKILL)


@dataclass(frozen=True)
class Person:
    username: str
    password: str


@pytest.fixture
def person(readme_server, request):
    """A new user of the product for this test, with the demo's world (the continuity
    scenario: the Night Caretaker, the rooftop greenhouse, a correction, a forget, a
    conversation-level boundary). Named after the test, so tests never share one."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[-60:].strip("-")
    password = "pw-" + secrets.token_urlsafe(12)
    readme_server.manage("load_demo", f"--username={name}", f"--password={password}")
    return Person(name, password)


# --- the browser --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium():
    """One Chromium per test file. Playwright's sync API keeps an event loop running in this
    thread while it is started, and Django refuses database calls from such a thread, so it
    must stop before the process moves on to other test files (pytest-xdist runs several
    files in one process)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()


@pytest.fixture(params=sorted(WIDTHS.values(), reverse=True), ids=lambda w: f"{w}px")
def width(request) -> int:
    return request.param


def _fresh_page(chromium, width: int):
    """A fresh browser context at `width` (no cookies); JavaScript errors fail the test."""
    context = chromium.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors


@pytest.fixture
def page(chromium, width):
    """A fresh page at each width the user pages are checked at."""
    yield from _fresh_page(chromium, width)


@pytest.fixture
def desktop(chromium):
    """A fresh page at 1280 px, the width the admin and the support pages are checked at."""
    yield from _fresh_page(chromium, WIDTHS["desktop"])


@pytest.fixture
def sign_in(readme_server):
    def sign_in(page, who: Person, *, shot: str | None = None, look=None):
        from playwright.sync_api import expect

        page.goto(readme_server.url + "/memories/")
        expect(page).to_have_url(readme_server.url + "/login/?next=/memories/")
        if look is not None and shot:
            look(page, shot)
        page.get_by_label("Username").fill(who.username)
        page.get_by_label("Password").fill(who.password)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(readme_server.url + "/memories/")

    return sign_in


# --- looking at a page --------------------------------------------------------------------------


def axe_violations(page) -> list[dict]:
    """axe-core (bundled by axe-playwright-python) on the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    return Axe().run(page).response["violations"]


def assert_no_axe_violations(page) -> None:
    violations = axe_violations(page)
    report = "\n".join(
        f"- {v['id']} ({v['impact']}): {v['help']} — "
        + ", ".join(" ".join(n["target"]) for n in v["nodes"][:5])
        for v in violations
    )
    assert not violations, f"axe-core found {len(violations)} violation(s) on {page.url}:\n{report}"


def assert_stylesheets_applied(page, *, pages_css: bool = True) -> None:
    """Every linked stylesheet arrived and has rules, and (on the end user's pages) the
    computed style is the stylesheet's, not the browser's default."""
    sheets = page.evaluate("""() => [...document.querySelectorAll('link[rel=stylesheet]')]
        .map(l => ({href: l.href, rules: l.sheet ? l.sheet.cssRules.length : -1}))""")
    assert sheets, f"{page.url} links no stylesheet"
    missing = [s["href"] for s in sheets if s["rules"] <= 0]
    assert not missing, f"{page.url}: stylesheet(s) not applied: {missing}"
    if pages_css:
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == PAGES_BACKGROUND, (
            f"{page.url}: body background {background}, not the stylesheet's"
        )


def assert_fits_sideways(page) -> None:
    """Nothing is cut off: the page is no wider than the window (a wide table scrolls inside
    its own frame, with a visible cue)."""
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"{page.url} is {widths[0]} px wide in a {widths[1]} px window"


def assert_screen_reader_text_off_screen(page) -> None:
    shown = page.evaluate("""() => [...document.querySelectorAll('.visually-hidden')]
        .map(e => e.getBoundingClientRect()).filter(r => r.width > 1 || r.height > 1).length""")
    assert shown == 0, f"{page.url}: {shown} screen-reader-only text(s) take up space on screen"


def screenshot(page, name: str) -> Path | None:
    """With `SCREENSHOTS=1`, the whole page as a person scrolling it sees it, for a reviewer to
    look at: JPEG, which Chromium encodes in about half the time of a PNG of a long page (the
    browser files take some 300). Its path; None when screenshots are off."""
    if not TAKE_SCREENSHOTS:
        return None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    width = page.viewport_size["width"]
    path = SCREENSHOTS / f"{name}-{width}.jpg"
    page.screenshot(path=str(path), full_page=True, type="jpeg", quality=85)
    return path


@pytest.fixture
def look():
    """`look(page, name)`: every check a user page must pass, and its screenshot (with
    `SCREENSHOTS=1`).
    `admin=True` for Django admin pages: the admin's own stylesheets, no axe (the admin is
    Django's), the same sideways check only where asked (`fits=True`)."""

    def look(
        page, name: str, *, admin: bool = False, fits: bool = True, axe: bool | None = None
    ) -> None:
        page.wait_for_load_state("load")
        assert_stylesheets_applied(page, pages_css=not admin)
        if fits:
            assert_fits_sideways(page)
        if not admin:
            assert_screen_reader_text_off_screen(page)
        if axe if axe is not None else not admin:
            assert_no_axe_violations(page)
        screenshot(page, name)

    return look
