"""`PUT /users/{user}/memory-settings` (SPEC §7, I8): switching `learn` and `use` through the
API, and what each switch does to writes, extraction, plans and resolve — and that neither
deletes anything."""

import pytest

from memory.models import MemoryProfile, MemoryRecord
from tests.factories import MessageFactory, user_facts
from tests.helpers import assert_problem
from tests.memory.api.calls import assert_memory, put_settings, settings_of
from tests.turns.api.calls import plan, turn

pytestmark = pytest.mark.django_db

# ---------------------------------------------------------------------------------------------
# The settings


@pytest.mark.parametrize("switch", ["learn", "use"])
def test_it_switches_each_setting_through_the_api_and_records_who_and_when(api, sam, switch):
    """I8/§10: PUT {learn?, use?} → {learn, use, changed_at, changed_by}; the change records
    when and that it came through the API; the other switch stays as it was."""
    r = put_settings(api, {switch: False})
    assert r.status_code == 200
    body = r.json()
    other = "use" if switch == "learn" else "learn"
    assert body[switch] is False and body[other] is True
    assert body["changed_by"] == "api" and body["changed_at"].endswith("Z")
    assert settings_of(api).json() == body
    profile = MemoryProfile.objects.get(user=sam)
    assert getattr(profile, switch) is False and profile.settings_changed_by == "api"

    back = put_settings(api, {switch: True}).json()
    assert back[switch] is True and back["changed_at"] >= body["changed_at"]


def test_it_records_nothing_when_nothing_changes(api, sam):
    """I8: a PUT that changes no switch records no change."""
    assert put_settings(api, {}).json() == {
        "learn": True,
        "use": True,
        "changed_at": None,
        "changed_by": None,
    }
    assert put_settings(api, {"learn": True, "use": True}).json()["changed_at"] is None
    changed = put_settings(api, {"use": False}).json()
    assert put_settings(api, {"use": False}).json() == changed


def test_it_answers_404_for_an_unknown_user(api, sam):
    assert_problem(put_settings(api, {"learn": False}, "nobody"), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"learn": "false"}, "learn"),
        ({"learn": 0}, "learn"),
        ({"use": 1}, "use"),
        ({"use": "yes"}, "use"),
        ({"learn": None}, "learn"),
        ({"use": []}, "use"),
        ({"remember": False}, "remember"),
    ],
)
def test_it_refuses_anything_but_booleans(api, sam, body, field):
    """§10: bad types → 400 validation_error naming the field; nothing changes."""
    assert field in assert_problem(put_settings(api, body), 400, "validation_error")["errors"]
    assert settings_of(api).json()["changed_at"] is None


def test_it_refuses_a_body_that_is_not_an_object(api, sam):
    assert_problem(put_settings(api, [True]), 400, "validation_error")


# ---------------------------------------------------------------------------------------------
# learn off


@pytest.mark.parametrize("authority", ["model-inferred", "rule-extracted"])
def test_it_pauses_model_and_rule_writes_while_learning_is_off(api, sam, authority):
    """I8: with `learn` off an assert with authority model-inferred or rule-extracted stores
    nothing: 200, outcome `blocked`, reason `paused` (as W3)."""
    put_settings(api, {"learn": False})
    r = assert_memory(api, key="pet.name", value="Rex", authority=authority)
    assert r.status_code == 200
    assert r.json() == {"outcome": "blocked", "memory": None, "reason": "paused"}
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize("authority", ["user-confirmed", "user-corrected"])
def test_it_still_stores_the_users_own_word_while_learning_is_off(api, sam, authority):
    """I8: only what the companion learns by itself is paused."""
    put_settings(api, {"learn": False})
    r = assert_memory(api, key="pet.name", value="Rex", authority=authority)
    assert r.status_code == 201 and r.json()["outcome"] == "created"


def test_it_replays_a_paused_write_by_its_idempotency_key(api, sam):
    """W2 with I8: the paused outcome is the key's outcome, as a W3 block is."""
    put_settings(api, {"learn": False})
    first = assert_memory(api, key="pet.name", value="Rex", idempotency_key="k1").json()
    put_settings(api, {"learn": True})
    again = assert_memory(api, key="pet.name", value="Rex", idempotency_key="k1")
    assert first["reason"] == "paused"
    assert again.status_code == 200
    assert again.json()["outcome"] == "replayed" and again.json()["reason"] == "paused"
    assert not MemoryRecord.objects.exists()


def test_it_extracts_nothing_from_a_turn_while_learning_is_off(api, sam, conv):
    """I8: with `learn` off turn creation extracts nothing and says so (`"extracted": []`,
    `"learning": false`); with it on, turns say `"learning": true`. A replay answers the turn
    as it was created."""
    on = turn(api, conv, "t1", "My dog's name is Rex.").json()
    assert on["learning"] is True and len(on["extracted"]) == 1
    put_settings(api, {"learn": False})
    off = turn(api, conv, "t2", "Call me Sam. I live in Boston.")
    assert off.status_code == 201
    assert off.json()["extracted"] == [] and off.json()["learning"] is False
    assert set(MemoryRecord.objects.values_list("key", flat=True)) == {"dog.name"}
    put_settings(api, {"learn": True})
    replay = turn(api, conv, "t2", "Call me Sam. I live in Boston.")
    assert replay.status_code == 200 and replay.json() == off.json()


def test_it_does_not_take_a_correction_from_a_message_while_learning_is_off(api, sam, conv):
    """I8: "extract nothing" includes corrections; the earlier name stays."""
    turn(api, conv, "t1", "The basil plant is named Harbor.")
    put_settings(api, {"learn": False})
    t = turn(api, conv, "t2", "I renamed the basil plant. It is Marlowe now, not Harbor.").json()
    assert t["extracted"] == []
    assert [m["value"] for m in plan(api, t["id"]).json()["memories"]] == ["Harbor"]


def test_it_remembers_nothing_while_learning_is_off(api, sam, conv, ctx):
    """I8: POST /memory/remember extracts nothing with `learn` off."""
    msg = MessageFactory(conversation=conv, content="I work at Acme.")
    put_settings(api, {"learn": False})
    r = api.post(
        "/api/v1/memory/remember",
        {"context": ctx, "text": "I work at Acme.", "source": str(msg.pk)},
        format="json",
    )
    assert r.status_code == 200 and r.json() == {"extracted": []}
    assert not MemoryRecord.objects.exists()
    put_settings(api, {"learn": True})
    again = api.post(
        "/api/v1/memory/remember",
        {"context": ctx, "text": "I work at Acme.", "source": str(msg.pk)},
        format="json",
    ).json()
    assert [e["outcome"] for e in again["extracted"]] == ["created"]


def test_it_still_confirms_and_corrects_while_learning_is_off(api, sam, conv):
    """I8: the user's own confirm and correct still work."""
    t = turn(api, conv, "t1", "My dog's name is Rex. I like jazz.").json()
    dog, jazz = sorted((e["memory"] for e in t["extracted"]), key=lambda m: m["key"])
    put_settings(api, {"learn": False})
    confirmed = api.post(f"/api/v1/memories/{dog['id']}/confirm", {}, format="json")
    assert (
        confirmed.status_code == 201 and confirmed.json()["memory"]["authority"] == "user-confirmed"
    )
    corrected = api.post(
        f"/api/v1/memories/{confirmed.json()['memory']['id']}/correct",
        {"value": "Max"},
        format="json",
    )
    assert corrected.status_code == 201 and corrected.json()["memory"]["value"] == "Max"
    many = api.post(f"/api/v1/memories/{jazz['id']}/correct", {"value": "blues"}, format="json")
    assert many.status_code == 201 and many.json()["memory"]["value"] == "blues"


# ---------------------------------------------------------------------------------------------
# use off


def _facts(api, conv):
    """A plan-worthy state: two supported memories and one unsupported."""
    t = turn(api, conv, "t1", "My dog's name is Rex. I like jazz.").json()
    invented = assert_memory(api, key="story.letter.outcome", value="sent").json()["memory"]
    return t, [e["memory"]["id"] for e in t["extracted"]], invented["id"]


@pytest.mark.parametrize("order", ["certainty", "relevance"])
def test_it_keeps_every_memory_out_of_the_plan_while_use_is_off(api, sam, conv, order):
    """I8: with `use` off every projected memory goes to the plan's `excluded` with reason
    `memory-off` and the memory section is empty; other exclusions keep their reasons."""
    t, supported, invented = _facts(api, conv)
    before = plan(api, t["id"], memory_order=order).json()
    assert len(before["memories"]) == 2
    put_settings(api, {"use": False})
    off = plan(api, t["id"], memory_order=order).json()
    assert off["memories"] == []
    memory_exclusions = {e["id"]: e["reason"] for e in off["excluded"] if e["kind"] == "memory"}
    assert memory_exclusions == {**dict.fromkeys(supported, "memory-off"), invented: "unsupported"}
    assert off["estimated_tokens"] == off["current_message"]["estimated_tokens"]
    assert off["plan_hash"] != before["plan_hash"]


def test_it_resolves_with_an_empty_prompt_while_use_is_off(api, sam, conv, ctx):
    """I8: /memory/resolve still answers active/excluded (for pages and support), with
    `prompt` empty and what it would have held in `prompt_excluded` as `memory-off`."""
    _, supported, invented = _facts(api, conv)
    body = {"context": ctx}
    on = api.post("/api/v1/memory/resolve", body, format="json").json()
    put_settings(api, {"use": False})
    off = api.post("/api/v1/memory/resolve", body, format="json").json()
    assert off["active"] == on["active"] and off["excluded"] == on["excluded"]
    assert len(on["prompt"]) == 2 and off["prompt"] == []
    assert {e["id"]: e["reason"] for e in off["prompt_excluded"]} == {
        **dict.fromkeys(supported, "memory-off"),
        invented: "unsupported",
    }
    assert [e["id"] for e in off["prompt_excluded"]] == sorted(
        e["id"] for e in off["prompt_excluded"]
    )


def test_it_deletes_nothing_and_gives_back_the_same_plan_when_switched_on_again(
    api, sam, conv, ctx
):
    """I8: neither switch deletes anything: after both are off and on again every memory is
    as it was, and the plan is the same (same hash)."""
    t, _, _ = _facts(api, conv)
    rows = list(MemoryRecord.objects.order_by("pk").values())
    first = plan(api, t["id"]).json()
    put_settings(api, {"learn": False, "use": False})
    assert plan(api, t["id"]).json()["memories"] == []
    assert list(MemoryRecord.objects.order_by("pk").values()) == rows
    put_settings(api, {"learn": True, "use": True})
    again = plan(api, t["id"]).json()
    assert again["memories"] == first["memories"] and again["plan_hash"] == first["plan_hash"]
    assert list(MemoryRecord.objects.order_by("pk").values()) == rows


def test_it_keeps_the_other_users_switches_apart(api, sam, conv):
    """§0: a switch belongs to one user."""
    from tests.factories import UserFactory

    UserFactory(username="alex")
    put_settings(api, {"use": False}, ref="alex")
    assert settings_of(api).json()["use"] is True
    t, supported, _ = _facts(api, conv)
    assert len(plan(api, t["id"]).json()["memories"]) == len(supported)


# ---------------------------------------------------------------------------------------------
# Query counts: reading the switches costs the hot paths no query


def _bulk(sam, conv, n):
    from config.clock import db_now
    from memory.models import MemorySource

    now = db_now()
    msg = MessageFactory(conversation=conv)
    rows = user_facts(sam, n, now=now)
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=msg) for r in rows])


@pytest.mark.parametrize("use", [True, False])
@pytest.mark.parametrize("n", [10, 1000])
def test_it_resolves_in_the_same_number_of_queries_either_way(
    api, sam, conv, ctx, n, use, django_assert_num_queries
):
    """I8/DESIGN: the switch comes with the user's row: resolve stays at 3 queries (the
    token, the context, and the memory state with the key registry in one statement)."""
    _bulk(sam, conv, n)
    put_settings(api, {"use": use})
    with django_assert_num_queries(3):
        r = api.post(
            "/api/v1/memory/resolve",
            {"context": {**ctx, "now": "2030-01-01T00:00:00Z"}},
            format="json",
        )
    assert r.status_code == 200 and (len(r.json()["prompt"]) == n) is use


def test_it_creates_a_turn_without_reading_the_switch_separately(api, sam, conv):
    """I8/DESIGN: turn creation reads `learn` with the conversation's row (joined), never in
    a query of its own; with learning off it touches no memory table at all: token,
    savepoint, conversation (with the profile), the read after the lock (turn key, and the
    clock on PostgreSQL), seq, message, turn (one statement on PostgreSQL), release."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.helpers import ON_POSTGRES

    put_settings(api, {"learn": False})
    with CaptureQueriesContext(connection) as captured:
        r = turn(api, conv, "t1", "My dog's name is Rex.")
    assert r.status_code == 201 and r.json()["learning"] is False
    sql = [q["sql"] for q in captured.captured_queries]
    assert len(sql) == (6 if ON_POSTGRES else 8), sql
    assert not [
        q
        for q in sql
        if "memory_memoryrecord" in q or q.startswith('SELECT "memory_memoryprofile"')
    ]
    assert any("memory_memoryprofile" in q for q in sql if "conversations_conversation" in q)
