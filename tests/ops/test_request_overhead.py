"""What an API request costs before and around its own work, in exact query counts, with the
deployment's shared cache (the database cache) counting the throttle:

- the token check is one query, and it brings the catalog version (config.catalog) — none
  while the process remembers the token (config.credentials, tests/ops/test_credentials.py);
- the throttle is one statement (config.throttle: an upsert on its own table) when the
  process sends its counts, at most once a second, and none in between;
- the reply (I4) is one statement on PostgreSQL, three in a transaction on SQLite.

The suite's other endpoint counts run on a per-process cache (tests/conftest.py), where the
throttle costs no query; these tests add the shared cache back."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.models import ThrottleWindow
from conversations.models import Message, Turn
from tests.factories import CharacterFactory, ConversationFactory, UserFactory
from tests.helpers import ON_POSTGRES, redis_reachable

pytestmark = pytest.mark.django_db

AUTH, THROTTLE = 1, 1


@pytest.fixture
def shared_cache(settings):
    """The deployment's default: Django's database cache (its table made by migrate)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "companion_cache",
        }
    }


@pytest.fixture
def ping(settings):
    settings.ROOT_URLCONF = "tests.ops.ping_urls"
    return "/api/v1/test-ping"


def queries(fn) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        fn()
    return [q["sql"] for q in captured.captured_queries]


@pytest.fixture
def clock(monkeypatch):
    """The throttle's clock, standing still unless a test moves it (15 s into a minute)."""
    from config.throttle import RuntimeThrottle

    now = [600.0 * 1000 + 15]
    monkeypatch.setattr(RuntimeThrottle, "timer", lambda self: now[0])
    return now


def test_it_costs_a_trivial_request_the_token_and_a_throttle_flush_a_second(
    api, ping, shared_cache, clock
):
    sqls = queries(lambda: api.get(ping))
    assert len(sqls) == AUTH + THROTTLE, sqls
    assert "config_apitoken" in sqls[0] and "config_catalogversion" in sqls[0]
    assert "config_throttlewindow" in sqls[1]
    for _ in range(3):  # within the same second: counted in the process
        assert len(queries(lambda: api.get(ping))) == AUTH
    clock[0] += 1
    sqls = queries(lambda: api.get(ping))
    assert len(sqls) == AUTH + THROTTLE and "config_throttlewindow" in sqls[1]
    assert ThrottleWindow.objects.get().hits == 5  # every hit sent, none lost


def test_it_costs_nothing_for_the_throttle_on_a_per_process_cache(api, ping):
    assert len(queries(lambda: api.get(ping))) == AUTH


@pytest.fixture
def turn(db):
    from turns.creation import turn_create

    conversation = ConversationFactory(
        user=UserFactory(username="sam"), character=CharacterFactory(slug="rowan")
    )
    return turn_create(conversation_id=conversation.pk, turn_key="t1", content="Hello there").turn


# PostgreSQL: one statement (no transaction needed). SQLite: the claim, the seq and the insert
# in a transaction (inside the test's transaction: a savepoint and its release).
REPLY = 1 if ON_POSTGRES else 3 + 2
REPLAY = 1 + 1 if ON_POSTGRES else 1 + 2 + 1


def test_it_runs_the_exact_queries_of_the_reply_request(api, turn, shared_cache, clock):
    url = f"/api/v1/turns/{turn.pk}/reply"
    with CaptureQueriesContext(connection) as first:
        response = api.post(url, {"content": "Hi!"}, format="json")
    assert response.status_code == 201
    assert len(first) == AUTH + THROTTLE + REPLY, [q["sql"] for q in first.captured_queries]
    message = Message.objects.get(pk=response.json()["message"]["id"])
    assert (message.role, message.content, message.seq) == ("assistant", "Hi!", 2)
    assert response.json()["message"]["seq"] == 2
    turn.refresh_from_db()
    assert (turn.status, turn.reply_message_id) == ("replied", message.pk)
    assert turn.conversation.last_seq == 2

    with CaptureQueriesContext(connection) as again:
        replay = api.post(url, {"content": "Something else"}, format="json")
    assert replay.status_code == 200 and replay.json()["replayed"] is True
    assert replay.json()["message"] == response.json()["message"]
    # The same second: the throttle counts in the process.
    assert len(again) == AUTH + REPLAY, [q["sql"] for q in again.captured_queries]
    assert Message.objects.filter(conversation=turn.conversation, role="assistant").count() == 1


def test_it_answers_404_to_a_reply_to_no_turn_and_writes_nothing(api, turn):
    before = Message.objects.count()
    assert (
        api.post(f"/api/v1/turns/{uuid.uuid4()}/reply", {"content": "x"}, format="json").status_code
        == 404
    )
    assert Message.objects.count() == before


def test_it_limits_a_reply_to_the_turns_owner_in_the_service(turn):
    from config.errors import NotFound
    from turns.replies import turn_commit_reply

    with pytest.raises(NotFound):
        turn_commit_reply(turn_id=turn.pk, content="Hi", user=UserFactory(username="other"))
    assert Turn.objects.get(pk=turn.pk).reply_message_id is None
    result = turn_commit_reply(turn_id=turn.pk, content="Hi", user=turn.user)
    assert not result.replayed and result.message.seq == 2


# ---------------------------------------------------------------------------------------------
# The throttle (SPEC §12 O4, O7): a fixed window counted in one statement; near its limit
# every hit is sent at once, so the limit is exact


@pytest.fixture
def limited(shared_cache, monkeypatch):
    """3 requests a minute per token (the throttle reads its rates once, at import)."""
    from config.throttle import RuntimeThrottle

    monkeypatch.setattr(
        RuntimeThrottle, "THROTTLE_RATES", {**RuntimeThrottle.THROTTLE_RATES, "token": "3/min"}
    )


def test_it_throttles_past_the_rate_until_the_window_ends(api, ping, limited, clock):
    now = clock  # 15 s into a minute window
    codes = [api.get(ping).status_code for _ in range(3)]
    refused = api.get(ping)
    assert codes == [200, 200, 200] and refused.status_code == 429
    assert refused["Content-Type"] == "application/problem+json"
    assert refused.json()["code"] == "throttled"
    assert refused["Retry-After"] == "45"
    assert ThrottleWindow.objects.get().hits == 4
    now[0] += 45  # the next window
    assert api.get(ping).status_code == 200
    assert ThrottleWindow.objects.get().hits == 1


def test_it_counts_each_token_on_its_own(api, ping, limited):
    from rest_framework.test import APIClient

    from config.models import ApiToken

    for _ in range(3):
        api.get(ping)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue('other')[1]}")
    assert api.get(ping).status_code == 429
    assert other.get(ping).status_code == 200


REDIS_URL = "redis://127.0.0.1:6379/9"


@pytest.mark.skipif(not redis_reachable(), reason="no Redis server on 127.0.0.1:6379")
def test_it_counts_the_throttle_on_redis_with_one_pipeline_and_no_query(
    api, ping, limited, settings
):
    from django.core.cache import caches

    prefix = f"throttle-test-{uuid.uuid4().hex}"
    settings.CACHES = {
        "default": {
            "BACKEND": "config.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": prefix,
        }
    }
    client = caches["default"]._cache.get_client(write=True)
    calls = []
    original = type(client).pipeline

    def pipeline(self, *args, **kwargs):
        calls.append(kwargs)
        return original(self, *args, **kwargs)

    try:
        type(client).pipeline = pipeline
        sqls = queries(lambda: api.get(ping))
        assert len(sqls) == AUTH and len(calls) == 1
        codes = [api.get(ping).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        (name,) = client.keys(f"{prefix}:*")
        assert 0 < client.ttl(name) <= 61
    finally:
        type(client).pipeline = original
        for name in client.keys(f"{prefix}:*"):
            client.delete(name)
