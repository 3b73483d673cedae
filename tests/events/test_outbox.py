"""SPEC V1: every path that changes state leaves its event in the change's own transaction,
carrying ids, states, versions and times — never a value, message content or key."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError, connection

from conversations.scopes import Scope
from conversations.services import conversation_delete, user_delete
from events import outbox
from events.models import Event
from memory import forgetting
from memory import services as memory_services
from memory.models import MemoryRecord
from policy import services as policy_services
from support import services as support_services
from tests.factories import CharacterFactory, ConversationFactory, MessageFactory, UserFactory
from turns import portability
from turns.creation import turn_create

pytestmark = pytest.mark.django_db

SECRET_WORDS = ("Rexalot", "Quillmoor", "dog.name", "pet.secretname")


@pytest.fixture
def conv():
    user = UserFactory(username="sam")
    memory_services.ensure_profile(user)
    return ConversationFactory(user=user, character=CharacterFactory(slug="rowan"))


def events(**filters):
    return list(
        Event.objects.filter(**filters)
        .order_by("txid", "id")
        .values_list("type", "user_ref", "data")
    )


def types():
    return [t for t, _, _ in events()]


def assert_no_private_text():
    """§12: no event holds a value, message content or key."""
    dumped = json.dumps([d for _, _, d in events()])
    for word in SECRET_WORDS:
        assert word.lower() not in dumped.lower()


def test_it_writes_memory_created_for_an_asserted_memory(conv):
    result = memory_services.memory_assert(
        user=conv.user,
        key="pet.secretname",
        value="Rexalot",
        scope=Scope("user"),
        authority="user-confirmed",
    )
    [(type_, user, data)] = events()
    assert (type_, user) == ("memory.created", "sam")
    assert data == {
        "memory": result.record.id,
        "scope": {"kind": "user"},
        "version": 1,
        "authority": "user-confirmed",
        "valid_from": result.record.valid_from.isoformat().replace("+00:00", "Z"),
        "valid_until": None,
        "supersedes": None,
    }
    assert_no_private_text()


def test_it_leaves_no_event_for_an_unchanged_or_blocked_write(conv):
    memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    )
    memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    )
    assert types() == ["memory.created"]


def test_it_records_a_correction_creating_a_record_and_changing_the_one_it_supersedes(conv):
    first = memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    ).record
    corrected = memory_services.memory_correct(record_id=first.id, value="Quillmoor").record
    assert events()[1:] == [
        ("memory.created", "sam", events()[1][2]),
        ("memory.changed", "sam", {"memory": first.id, "state": "superseded", "by": corrected.id}),
    ]
    assert events()[1][2]["supersedes"] == first.id
    assert_no_private_text()


def test_it_records_a_retraction_with_the_records_e1_state_and_retracted_at(conv):
    """V5: a retracted record's `memory.changed` carries its E1 state (`expired`: W10 closed
    its window at that moment) with `retracted_at` — "retracted" is not a state."""
    first = memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    ).record
    memory_services.memory_retract(record_id=first.id)
    row = MemoryRecord.objects.get(pk=first.id)
    at = row.retracted_at.isoformat().replace("+00:00", "Z")
    assert events()[-1] == (
        "memory.changed",
        "sam",
        {"memory": first.id, "state": "expired", "by": None, "valid_until": at, "retracted_at": at},
    )
    assert Event.objects.order_by("-id").first().occurred_at == row.retracted_at


def test_it_names_a_forgets_tombstone_purged_records_and_withheld_messages(conv):
    first = memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    ).record
    tombstone = forgetting.memory_forget(record_id=first.id)
    assert events()[-1] == (
        "memory.forgotten",
        "sam",
        {
            "tombstone": str(tombstone.pk),
            "scope": {"kind": "user"},
            "memories": [first.id],
            "withheld_messages": [],
            "withheld_memories": [],
            "forgotten_by": "user",
        },
    )
    forgetting.tombstone_delete(tombstone_id=tombstone.pk)
    assert events()[-1] == (
        "tombstone.deleted",
        "sam",
        {"tombstone": str(tombstone.pk), "released_messages": [], "released_memories": []},
    )
    assert_no_private_text()


def test_it_lists_the_messages_a_forget_withholds_and_an_undo_releases(conv):
    """V1 + F6: `memory.forgotten` carries the ids of the messages the forget withholds (the
    source and a message that mentions the value), `tombstone.deleted` the ids it gives back."""
    said = MessageFactory(conversation=conv, content="My cat is called Miso.")
    again = MessageFactory(conversation=conv, content="Miso slept all day.")
    first = memory_services.memory_assert(
        user=conv.user, key="cat.name", value="Miso", scope=Scope("user"), sources=[str(said.pk)]
    ).record
    tombstone = forgetting.memory_forget(record_id=first.id)
    held = sorted([str(said.pk), str(again.pk)])
    assert events()[-1][2]["withheld_messages"] == held
    forgetting.tombstone_delete(tombstone_id=tombstone.pk)
    assert events()[-1] == (
        "tombstone.deleted",
        "sam",
        {"tombstone": str(tombstone.pk), "released_messages": held, "released_memories": []},
    )
    assert_no_private_text()


def test_it_leaves_the_event_when_support_forgets_on_the_users_behalf(conv):
    staff = support_services.support_staff_put(username="helper", password="pw-long-enough-1")
    first = memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    ).record
    support_services.support_forget(staff=staff, record_ids=[first.id], reason="asked by mail")
    type_, _, data = events()[-1]
    assert (
        type_ == "memory.forgotten"
        and data["forgotten_by"] == "support"
        and data["memories"] == [first.id]
    )


def test_it_writes_settings_changed_for_a_switch_change_and_nothing_for_a_no_op(conv):
    memory_services.memory_settings_set(user=conv.user, changed_by="api", learn=False)
    memory_services.memory_settings_set(user=conv.user, changed_by="api", learn=False)
    assert events() == [
        ("settings.changed", "sam", {"learn": False, "use": True, "changed_by": "api"})
    ]


def test_it_gives_a_policy_change_the_version_and_the_rules(conv):
    rule = policy_services.rule_create(
        user=conv.user,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    assert events()[-1] == (
        "policy.changed",
        "sam",
        {"policy_version": rule.policy_version_after, "rules": [str(rule.pk)]},
    )
    policy_services.rule_revoke(rule_id=rule.pk)
    assert events()[-1] == (
        "policy.changed",
        "sam",
        {"policy_version": rule.policy_version_after + 1, "rules": [str(rule.pk)]},
    )
    policy_services.rule_revoke(rule_id=rule.pk)  # a retried revoke changes nothing
    assert types().count("policy.changed") == 2


def test_it_writes_a_learning_turns_events_with_the_turn(conv):
    result = turn_create(
        conversation_id=conv.pk, turn_key="t1", content="My dog's name is Rexalot."
    )
    [created] = result.turn.extracted
    assert events() == [("memory.created", "sam", events()[0][2])]
    assert (
        events()[0][2]["memory"] == created["memory"]
        and events()[0][2]["authority"] == "rule-extracted"
    )
    turn_create(conversation_id=conv.pk, turn_key="t2", content="How was your day?")
    assert types() == ["memory.created"]  # a turn that learns nothing changes nothing
    assert_no_private_text()


def test_it_writes_conversation_deleted_when_a_conversation_is_deleted(conv):
    conversation_delete(conversation_id=conv.pk)
    assert events() == [("conversation.deleted", "sam", {"conversation": str(conv.pk)})]


def test_it_leaves_only_user_deleted_when_a_user_is_deleted(conv):
    other = UserFactory(username="ana")
    memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    )
    memory_services.memory_assert(
        user=other, key="pet.secretname", value="Quillmoor", scope=Scope("user")
    )
    user_delete(user=conv.user)
    assert events() == [("memory.created", "ana", events()[0][2]), ("user.deleted", "sam", {})]


def test_it_announces_what_an_import_created(conv):
    memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    )
    memory_services.memory_settings_set(user=conv.user, changed_by="api", use=False)
    snapshot = portability.user_export(user=conv.user)
    user_delete(user=conv.user)
    Event.objects.all().delete()
    portability.user_import(data=snapshot)
    assert types() == ["memory.created", "settings.changed"]
    assert events()[0][2]["memory"] == snapshot["memories"][0]["id"]
    assert events()[1][2] == {"learn": True, "use": False, "changed_by": "api"}
    # V5: a record's event carries the record's own time, not the import's.
    created = Event.objects.get(type="memory.created")
    assert created.occurred_at == MemoryRecord.objects.get(pk=created.data["memory"]).recorded_at
    assert_no_private_text()


def test_it_leaves_no_event_for_a_change_that_fails(conv, monkeypatch):
    """V1: the event is in the change's transaction, so it rolls back with it."""
    first = memory_services.memory_assert(
        user=conv.user, key="pet.secretname", value="Rexalot", scope=Scope("user")
    ).record

    def boom(*args, **kwargs):
        raise OperationalError("connection lost")

    monkeypatch.setattr(forgetting, "purge_covered", boom)
    with pytest.raises(OperationalError):
        forgetting.memory_forget(record_id=first.id)
    assert types() == ["memory.created"]


def test_it_never_writes_an_event_outside_a_transaction():
    """V1: `record` refuses autocommit, where the event would commit apart from its change."""
    from django.utils import timezone

    event = outbox.conversation_deleted("sam", conversation="c", at=timezone.now())
    with pytest.raises(RuntimeError):
        _outside_transaction(lambda: outbox.record([event]))


def _outside_transaction(fn):
    # The test runs in a transaction; an autocommit connection of its own shows the refusal.
    connection.in_atomic_block, saved = False, connection.in_atomic_block
    try:
        fn()
    finally:
        connection.in_atomic_block = saved


def test_it_keeps_the_user_ref_of_user_deleted_after_the_user_is_gone(conv):
    user_delete(user=conv.user)
    assert not get_user_model().objects.filter(username="sam").exists()
    assert Event.objects.get().user_ref == "sam"
    assert MemoryRecord.objects.count() == 0


@pytest.fixture
def priya(conv):
    """F7.2's example: the sister's name, where Priya works (by key), the routine that names
    her (by value), and a taste that does not."""

    def remember(key, value):
        return memory_services.memory_assert(
            user=conv.user, key=key, value=value, scope=Scope("user")
        ).record.id

    return {
        "sister": remember("family.sister.name", "Priya"),
        "works": remember("people.priya.works_at", "Globex"),
        "visits": remember("user.routine", "visiting Priya on Sundays"),
        "tea": remember("user.likes", "green tea"),
    }


def test_it_lists_the_memories_a_forget_withholds_and_an_undo_releases_f7_2(conv, priya):
    """V1 + F7.2: `memory.forgotten` lists the ids of the other memories the forget withholds,
    `tombstone.deleted` those its undo gives back — ids only, never a value or key."""
    tombstone = forgetting.memory_forget(record_id=priya["sister"])
    held = sorted([priya["works"], priya["visits"]])
    assert events()[-1] == (
        "memory.forgotten",
        "sam",
        {
            "tombstone": str(tombstone.pk),
            "scope": {"kind": "user"},
            "memories": [priya["sister"]],
            "withheld_messages": [],
            "withheld_memories": held,
            "forgotten_by": "user",
        },
    )
    forgetting.tombstone_delete(tombstone_id=tombstone.pk)
    assert events()[-1] == (
        "tombstone.deleted",
        "sam",
        {"tombstone": str(tombstone.pk), "released_messages": [], "released_memories": held},
    )
    assert "priya" not in json.dumps([d for _, _, d in events()]).lower()


def test_it_releases_on_undo_only_the_memories_no_other_forget_withholds_f7_2(conv, priya):
    """V1 + F4 + F7.2: undoing one of two forgets that both withhold a memory lists only what
    no other forget still withholds."""
    first = forgetting.memory_forget(record_id=priya["sister"])
    memory_services.memory_assert(
        user=conv.user, key="user.best_friend", value="Priya", scope=Scope("user")
    )
    friend = MemoryRecord.objects.get(key="user.best_friend").pk
    second = forgetting.memory_forget(record_id=friend)
    assert events()[-1][2]["withheld_memories"] == sorted([priya["works"], priya["visits"]])
    forgetting.tombstone_delete(tombstone_id=first.pk)
    assert events()[-1][2]["released_memories"] == []
    forgetting.tombstone_delete(tombstone_id=second.pk)
    assert events()[-1][2]["released_memories"] == sorted([priya["works"], priya["visits"]])


def test_it_announces_the_memory_links_an_import_restored_f7_2(conv, priya):
    """V1 + F7.2 on import: the imported tombstone's `memory.forgotten` lists the memories it
    withholds, as the file's links restored them."""
    tombstone = forgetting.memory_forget(record_id=priya["sister"])
    snapshot = portability.user_export(user=conv.user)
    user_delete(user=conv.user)
    Event.objects.all().delete()
    portability.user_import(data=snapshot)
    [forgot] = [d for t, _, d in events() if t == "memory.forgotten"]
    assert forgot["tombstone"] == str(tombstone.pk)
    assert forgot["withheld_memories"] == sorted([priya["works"], priya["visits"]])
