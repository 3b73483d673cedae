"""DESIGN habit 6: every changelist runs a constant number of queries, for 10 rows
or 500 (no N+1), outside a reveal and inside one (SPEC §13 S1: the page is logged in one
insert, whatever the number of values it shows)."""

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from config.models import ApiToken
from conversations.scopes import Scope
from conversations.selectors import load_context
from conversations.services import character_put, conversation_create
from memory.forgetting import forget_key
from memory.models import KeyDefinition, MemoryRecord
from memory.services import memory_assert
from policy.media_jobs import media_job_admit
from policy.services import decision_answer, rule_create
from support.reveals import reveal_current, reveal_open
from support.services import support_retract
from tests.factories import UserFactory
from tests.support.conftest import staff_client
from turns.creation import turn_create
from turns.replies import turn_commit_reply

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

APPS = {"memory", "policy", "conversations", "config", "support", "auth", "events"}


def grow(start: int, stop: int, staff) -> None:
    """Users start..stop-1, each with one of everything the admin lists, made by the services
    (the key registry has no service: it is catalog data edited in the admin)."""
    character, _ = character_put(slug="captain-rowan", name="Captain Rowan")
    for i in range(start, stop):
        user = UserFactory(username=f"bulk{i}")
        character_put(slug=f"character-{i}", name=f"Character {i}")
        KeyDefinition.objects.create(key=f"bulk.k{i}", cardinality="one", label=f"Key {i}")
        ApiToken.issue(f"runtime {i}")
        conversation = conversation_create(
            user=user, character=character, title=f"private title {i}"
        )
        turn = turn_create(
            conversation_id=conversation.pk, turn_key="t", content=f"private hello {i}"
        ).turn
        if i % 10 == 0:
            turn_commit_reply(turn_id=turn.pk, content=f"private reply {i}")
        scope = (
            Scope("user"),
            Scope("character", character="captain-rowan"),
            Scope("conversation", conversation=str(conversation.pk)),
        )[i % 3]
        record = memory_assert(
            user=user,
            key=f"bulk.k{i}",
            value=f"private value {i}",
            scope=scope,
            sources=[str(turn.user_message_id)],
            idempotency_key=f"idem-{i}",
        ).record
        support_retract(
            staff=staff, record_ids=[record.id], reason="bulk"
        )  # a retraction and its log row
        forget_key(user=user, key="gone.name", scope_id="*")
        rule_create(
            user=user,
            capability="tone.playful",
            effect=("allow", "deny")[i % 2],
            source="explicit-user",
            scope={"kind": "conversation", "conversation": str(conversation.pk)},
        )
        ctx = load_context(
            {"user": user.username, "conversation": str(conversation.pk), "scene": "roof"}
        )
        job, _ = media_job_admit(
            context=ctx,
            capability="media.voice",
            requested_by="assistant",
            idempotency_key=f"job-{i}",
        )
        decision_answer(
            decision_id=job.decision_id, answer="allow", remember="once", media_job_id=job.pk
        )
        reveal_open(staff=staff, user=user.username, reason=f"Ticket {i}: bulk")  # log rows (S1)


def changelists(*, private_only=False):
    for model, model_admin in admin.site._registry.items():
        opts = model._meta
        if opts.app_label in APPS and (getattr(model_admin, "masks", False) or not private_only):
            yield reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")


def count(client, url, *, warm=True) -> int:
    if warm:
        client.get(url)  # warm the per-process caches (content types, templates)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured.captured_queries)


def revealing(staff, user: str = "bulk0") -> None:
    current = reveal_current(staff=staff).open
    if current is None or current.subject_ref != user:
        reveal_open(staff=staff, user=user, reason="Ticket 1: measuring the admin")


def measure(clients, staff, *, warm) -> dict:
    """Every changelist as staff without a reveal (masked) and, for the admins that mask
    something, inside a reveal of bulk0 with the list searched for bulk0, so the page shows
    (and logs) private text."""
    counts = {("masked", url): count(clients["masked"], url, warm=warm) for url in changelists()}
    revealing(staff)
    counts.update(
        {
            ("revealed", url): count(clients["revealed"], url + "?q=bulk0", warm=warm)
            for url in changelists(private_only=True)
        }
    )
    return counts


def test_it_costs_every_changelist_the_same_for_10_or_500_rows(viewer, superuser):
    from support.models import PrivateTextAccess

    clients = {"masked": staff_client(viewer), "revealed": staff_client(superuser)}
    grow(0, 10, superuser)
    small = measure(clients, superuser, warm=True)
    grow(10, 500, superuser)
    large = measure(clients, superuser, warm=False)
    assert MemoryRecord.objects.filter(user__username__startswith="bulk").count() == 500
    # One row per page that showed text (values, messages, titles: bulk0's keys have no free
    # part), whatever its rows: warm and measured with 10 users, measured with 500.
    texts = [m for m, a in admin.site._registry.items() if getattr(a, "private_fields", ())]
    assert len(texts) == 3
    pages = PrivateTextAccess.objects.filter(event="page", subject__username="bulk0")
    assert pages.count() == 3 * len(texts)
    changed = {key: (small[key], large[key]) for key in small if small[key] != large[key]}
    assert not changed, changed
    # And searching, filtering and paging stay constant too.
    client = clients["revealed"]
    for url in [
        "/admin/memory/memoryrecord/?q=bulk&state=active",
        "/admin/memory/memoryrecord/?p=3",
        "/admin/conversations/message/?role__exact=user",
        "/admin/memory/memoryrecord/?value__startswith=private",
        "/admin/policy/decisionlog/?effect__exact=ask",
        "/admin/policy/policyrule/?revoked=no",
    ]:
        base = url.split("?")[0]
        reference = small.get(("revealed", base), small[("masked", base)])
        assert count(client, url, warm=False) <= reference + 2, url
