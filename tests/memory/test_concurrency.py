"""W2/W8 under real concurrency on PostgreSQL: threads, one connection each."""

import pytest

from conversations.scopes import Scope
from conversations.selectors import load_context
from memory import services
from memory.models import IdempotencyRecord, MemoryRecord
from memory.selectors.resolution import ContextResolution
from tests.concurrency import run_concurrently
from tests.factories import UserFactory, at
from tests.helpers import postgres_only

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]


def test_it_never_duplicates_a_version_under_concurrent_asserts():
    """W8: concurrent asserts of different values to one key get unique versions and leave
    exactly one winner."""
    user = UserFactory(username="racer")
    results = run_concurrently(
        lambda i: services.memory_assert(
            user=user, key="pet.name", value=f"name-{i}", scope=Scope("user")
        ),
        12,
    )
    assert [r[0] for r in results] == ["ok"] * 12, results
    versions = list(MemoryRecord.objects.filter(user=user).values_list("version", flat=True))
    assert sorted(versions) == list(range(1, 13))
    active = ContextResolution(load_context({"user": "racer"})).resolution.active
    assert len(active) == 1


def test_it_stores_one_record_for_concurrent_retries_with_one_idempotency_key():
    """W2: concurrent requests with one idempotency key store one record."""
    user = UserFactory(username="retrier")
    results = run_concurrently(
        lambda i: services.memory_assert(
            user=user, key="pet.name", value="Rex", scope=Scope("user"), idempotency_key="same-key"
        ),
        10,
    )
    assert all(kind == "ok" for kind, _ in results), results
    outcomes = sorted(r.outcome for _, r in results)
    assert outcomes == ["created"] + ["replayed"] * 9
    assert MemoryRecord.objects.filter(user=user).count() == 1
    assert IdempotencyRecord.objects.filter(user=user).count() == 1
    assert len({r.record.id for _, r in results}) == 1


def test_it_takes_recorded_at_from_the_database_clock(monkeypatch):
    """§0: server-assigned times come from the database clock, not the worker's."""
    import django.utils.timezone as tz

    user = UserFactory(username="clocked")
    monkeypatch.setattr(tz, "now", lambda: at("1999-01-01T00:00"))
    record = services.memory_assert(
        user=user, key="pet.name", value="Rex", scope=Scope("user")
    ).record
    assert record.recorded_at.year >= 2026
    assert record.valid_from == record.recorded_at
