"""Fixtures every test directory shares, defined once: the runtime's API client, the pages'
client signed in as sam (`page`, with `say` for what sam tells the companion) and the one
world most tests start from — sam, Captain Rowan and their conversation (and alex beside
them, for tests that need a second user)."""

import pytest
from django.test import Client
from django.test.utils import override_settings
from hypothesis import settings as hypothesis_settings

from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from turns.continuity import play
from turns.creation import turn_create

# Property tests assert rules, never speed (speed is the benchmark's): no example fails for
# the time it took on a busy machine.
hypothesis_settings.register_profile("suite", deadline=None)
hypothesis_settings.load_profile("suite")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """The files marked `slow` run first, then the others by how many tests they hold, so the
    workers of a parallel run (`make test`: xdist, one file per work unit, in this order) end
    together instead of one finishing a long file alone. Within a file the order is kept."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def first(tests: list) -> tuple[bool, int]:
        return (not any(t.get_closest_marker("slow") for t in tests), -len(tests))

    items[:] = [item for tests in sorted(files.values(), key=first) for item in tests]


def user_fixture(username: str):
    """A fixture that makes one user; every test directory's people are made through it."""

    @pytest.fixture
    def make(db):
        return UserFactory(username=username)

    return make


def character_fixture(slug: str, name: str):
    """A fixture that makes one character of the catalog."""

    @pytest.fixture
    def make(db):
        return CharacterFactory(slug=slug, name=name)

    return make


sam = user_fixture("sam")
alex = user_fixture("alex")
rowan = character_fixture("captain-rowan", "Captain Rowan")


@pytest.fixture
def conv(sam, rowan):
    return ConversationFactory(user=sam, character=rowan, title="Rooftop greenhouse")


@pytest.fixture
def ctx(sam, rowan, conv):
    """The API's context object for sam's conversation with Rowan."""
    return {"user": sam.username, "character": rowan.slug, "conversation": str(conv.pk)}


@pytest.fixture
def alex_conv(alex, rowan):
    return ConversationFactory(user=alex, character=rowan, title="Alex's chat")


@pytest.fixture
def api_token(db):
    from config.models import ApiToken

    _, raw = ApiToken.issue("test-runtime")
    return raw


@pytest.fixture
def api(api_token):
    """A DRF client authenticated as the chat runtime (Bearer token)."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    return client


@pytest.fixture
def page(sam):
    """A browser-like client signed in as sam (the server-rendered pages' tests)."""
    client = Client()
    client.force_login(sam)
    return client


@pytest.fixture
def say(conv):
    """sam says something in the conversation: a turn whose message the extractor reads
    (SPEC §8), so memories get that message as their source."""
    counter = {"n": 0}

    def _say(text, conversation=None):
        counter["n"] += 1
        return turn_create(
            conversation_id=(conversation or conv).pk, turn_key=f"t{counter['n']}", content=text
        ).turn

    return _say


@pytest.fixture
def story(db):
    """wren, after the continuity script's conversations (turns.continuity): a user with rows
    of every section of a snapshot — what a user's export and a user's erasure are tried on."""
    _, user = play(username="wren", keep=True)
    return user


@pytest.fixture(autouse=True, scope="session")
def _static_files_in_place(tmp_path_factory):
    """Pages link their stylesheet through the static files storage. The real one
    (WhiteNoise's hashed manifest) needs `collectstatic` first, which `make run` and the deploy
    steps run; the browser tests use exactly that (tests/browser/conftest.py). Everywhere else
    the suite renders pages with the plain storage and an empty STATIC_ROOT of its own, so it
    never depends on a stale (or missing) `staticfiles/` directory."""
    with override_settings(
        STATIC_ROOT=tmp_path_factory.mktemp("static-root"),
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        },
    ):
        yield


@pytest.fixture(autouse=True)
def _per_test_cache(settings):
    """Each test starts with an empty cache of its own process. The deployment's shared cache
    (the database cache, or Redis) adds the same few queries to every API request, which the
    endpoints' query-count assertions leave out; tests/ops/test_shared_counters.py proves the
    shared caches themselves, across gunicorn processes."""
    from axes.handlers.proxy import AxesProxyHandler
    from django.core.cache import cache

    from config import cache as shared_cache
    from config import credentials, outage, throttle

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "companion-tests",
        }
    }
    # Every request checks its token in the database (the query counts assert one check per
    # request); tests/ops/test_credentials.py proves the process's token memory itself.
    settings.API_TOKEN_CACHE_SECONDS = 0
    settings.API_TOKEN_LAST_USED_SECONDS = 0
    AxesProxyHandler.get_implementation(force=True)
    cache.clear()
    throttle.reset(), credentials.clear(), shared_cache.reset_breakers(), outage.EPISODES.reset()
    yield
    cache.clear()
    throttle.reset(), credentials.clear(), shared_cache.reset_breakers(), outage.EPISODES.reset()
    AxesProxyHandler.implementation = None


@pytest.fixture(autouse=True)
def _cold_catalog_cache():
    """Each test starts with this process's catalog cache, memory cache and held histories
    empty (config.catalog, memory.storage.MEMORY_CACHE, turns.storage.HELD_HISTORIES), so a
    query count never depends on which test ran before: the first request of a test loads the
    catalog data it reads; later requests of the test find it warm unless the catalog changed."""
    from config import catalog
    from memory.storage import MEMORY_CACHE
    from turns.storage import HELD_HISTORIES

    catalog.clear_all()
    MEMORY_CACHE.clear()
    HELD_HISTORIES.clear()
    yield
    catalog.clear_all()
    MEMORY_CACHE.clear()
    HELD_HISTORIES.clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Real hashers are slow on purpose; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _seeded_catalog(request):
    """Transactional tests (threads, live servers) end by flushing every table, seeded catalog
    rows included (key labels, capabilities, the defaults' policy version, the Support group).
    Before each database test, put them back if a flush took them."""
    marker = request.node.get_closest_marker("django_db")
    wanted = marker is not None or {"db", "transactional_db", "live_server"} & set(
        request.fixturenames
    )
    if not wanted:
        yield
        return
    request.getfixturevalue("django_db_setup")
    blocker = request.getfixturevalue("django_db_blocker")
    with blocker.unblock():
        from policy.models import Capability

        if not Capability.objects.exists():
            from tests.helpers import reseed_catalog

            reseed_catalog()
    yield


@pytest.fixture
def in_process_wsgi():
    """Requests go straight into the WSGI app; as Django's own test client does, keep the end
    of a request from closing the test's database connection (its transaction holds the
    test's data)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)
