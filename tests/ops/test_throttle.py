"""SPEC §12 O7: API throttles count per end user the request acts for — the `user` of its
path, query, body or body context — with a separate, much higher guard per token that also
counts the requests acting for no user; counted in process and sent to the shared cache in
batches (O4: no write per request); O6: while the shared cache is down, each process counts
alone and still applies the limit."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config import throttle
from config.cache import CacheUnavailable
from config.models import ThrottleWindow
from config.throttle import RuntimeThrottle
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

DEAD_REDIS = "redis://127.0.0.1:1/0"  # nothing listens on port 1: every call fails at once


@pytest.fixture
def rates(monkeypatch):
    def set_rates(**rates):
        monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", rates)

    return set_rates


@pytest.fixture
def clock(monkeypatch):
    now = [6000.0 * 60 + 10]  # 10 s into a minute window
    monkeypatch.setattr(RuntimeThrottle, "timer", lambda self: now[0])
    return now


@pytest.fixture
def users():
    for ref in ("ana", "ben"):
        UserFactory(username=ref)


def test_it_serves_one_runtime_for_thousands_of_users_by_default():
    """O7: the defaults: a user may send 1,000 requests a second, the token 16,000 a second."""
    defaults = RuntimeThrottle.THROTTLE_RATES
    assert RuntimeThrottle().parse_rate(defaults["runtime"]) == (60_000, 60)
    assert RuntimeThrottle().parse_rate(defaults["token"]) == (1_000_000, 60)


def test_it_counts_each_end_user_on_its_own(api, rates, users):
    """O7: the `user` of the query; another user of the same token is not throttled."""
    rates(runtime="2/min", token="100/min")
    assert [api.get("/api/v1/memories?user=ana").status_code for _ in range(3)] == [200, 200, 429]
    assert api.get("/api/v1/memories?user=ben").status_code == 200


@pytest.mark.parametrize("where", ["path", "body", "context"])
def test_it_finds_the_user_in_the_path_the_body_and_the_context(api, rates, users, where):
    rates(runtime="1/min", token="100/min")

    def call(ref):
        if where == "path":
            return api.get(f"/api/v1/users/{ref}/memory-settings")
        if where == "body":
            return api.post(
                "/api/v1/memories",
                {"user": ref, "key": "pet.name", "value": "Rex", "scope": {"kind": "user"}},
                format="json",
            )
        return api.post("/api/v1/memory/resolve", {"context": {"user": ref}}, format="json")

    first, second, other = call("ana"), call("ana"), call("ben")
    # Each call answers as it does unthrottled: a read 200, an assert of a new memory 201 (§10).
    answered = 201 if where == "body" else 200
    assert (first.status_code, other.status_code) == (answered, answered), (
        first.json(),
        other.json(),
    )
    assert second.status_code == 429 and second.json()["code"] == "throttled"


def test_it_counts_requests_for_no_user_against_the_token_guard(api, rates, users):
    """O7: the capability list acts for no user: the token's guard counts it, and it counts
    every other request too."""
    rates(runtime="100/min", token="3/min")
    codes = [api.get("/api/v1/policy/capabilities").status_code for _ in range(2)]
    codes.append(api.get("/api/v1/memories?user=ana").status_code)
    codes.append(api.get("/api/v1/memories?user=ben").status_code)
    assert codes == [200, 200, 200, 429]


def test_it_never_names_a_counter_by_a_user_ref_in_the_clear():
    assert "ana" not in throttle.user_key("runtime", "ana")
    assert throttle.user_key("runtime", "ana") != throttle.user_key("runtime", "ben")


@pytest.fixture
def database_cache(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "companion_cache",
        }
    }


def test_it_sends_hits_far_from_the_limit_once_a_second_in_one_statement(
    api, users, clock, database_cache
):
    """O4 without a write per request: the first hit sends (and learns the totals), the next
    hits of that second are counted in the process, the first after it sends them all —
    every user's and the token's counters in one statement, no hit lost."""
    with CaptureQueriesContext(connection) as first:
        api.get("/api/v1/memories?user=ana")
    assert sum("config_throttlewindow" in q["sql"] for q in first.captured_queries) == 1
    with CaptureQueriesContext(connection) as batched:
        for ref in ("ana", "ben", "ana"):
            api.get(f"/api/v1/memories?user={ref}")
    assert not any("config_throttlewindow" in q["sql"] for q in batched.captured_queries)
    clock[0] += 1.0
    with CaptureQueriesContext(connection) as sent:
        api.get("/api/v1/memories?user=ben")
    assert sum("config_throttlewindow" in q["sql"] for q in sent.captured_queries) == 1
    hits = {row.key: row.hits for row in ThrottleWindow.objects.all()}
    assert hits == {
        throttle.user_key("runtime", "ana"): 3,
        throttle.user_key("runtime", "ben"): 2,
        throttle.token_key(api_token_pk()): 5,
    }


def api_token_pk():
    from config.models import ApiToken

    return ApiToken.objects.get(name="test-runtime").pk


def test_it_sends_every_hit_at_once_near_the_limit(clock):
    """Past half its limit, a counter is sent with every hit, so another process's hits are
    seen before the limit is reached."""
    sent, shared = [], {}

    class Store:
        def add(self, batch, durations):
            sent.append(dict(batch))
            for k, hits in batch.items():  # another process counted 2 more each time
                shared[k] = shared.get(k, 0) + hits + 2
            return dict(shared)

    counters = throttle.Counters(flush_seconds=1.0)
    totals = [counters.hit(Store(), "k", 60, 10, clock[0])[0] for _ in range(4)]
    # The first hit sends (1 + 2); the next two stay in the process (estimates 4, 5: at most
    # half of 10); the fourth (estimate 6) sends all three and learns the other's 2 more.
    assert totals == [3, 4, 5, 8] and len(sent) == 2


def test_it_counts_in_each_process_alone_while_the_shared_cache_is_down(
    api, rates, users, settings
):
    """O6: Redis unreachable: no request fails, and the limit still holds in the process."""
    settings.CACHES = {
        "default": {"BACKEND": "config.cache.ResilientRedisCache", "LOCATION": DEAD_REDIS}
    }
    rates(runtime="3/min", token="100/min")
    codes = [api.get("/api/v1/memories?user=ana").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert api.get("/api/v1/memories?user=ben").status_code == 200


def test_it_keeps_the_hits_counted_when_the_store_fails(clock):
    class Down:
        def add(self, batch, durations):
            raise CacheUnavailable("test")

    counters = throttle.Counters(flush_seconds=0.0)
    totals = [counters.hit(Down(), "k", 60, 5, clock[0])[0] for _ in range(6)]
    assert totals == [1, 2, 3, 4, 5, 6]


def test_it_forgets_ended_windows(clock):
    """A process serving thousands of users keeps only the counters of live windows."""
    counters = throttle.Counters(flush_seconds=1.0)
    store = throttle.LocalStore()
    for i in range(2000):
        counters.hit(store, f"user-{i}", 60, 100, clock[0])
    assert len(counters._ends) == 2000
    counters.hit(store, "user-0", 60, 100, clock[0] + 60)  # the next window
    assert len(counters._ends) == 1 and set(counters._durations) == {"user-0"}
