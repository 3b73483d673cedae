"""A small world for the admin tests, built through the services: one user (sam) with a
conversation whose title, messages and memories hold known private strings, a forgotten
memory, a retracted slot, an idempotency record, rules, decisions, an answer and a media job;
and three staff members: support (the Support group), privileged (Support +
view_private_text) and a superuser."""

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from conversations.scopes import Scope
from conversations.selectors import load_context
from conversations.services import conversation_create
from memory.forgetting import memory_forget
from memory.models import MemoryRecord
from memory.services import memory_assert, memory_correct, memory_retract
from policy.media_jobs import media_job_admit
from policy.services import decision_answer, decision_make, rule_create
from tests.factories import CharacterFactory, UserFactory
from turns.creation import turn_create
from turns.replies import turn_commit_reply

# Private strings: none may appear on any admin page without view_private_text.
VALUE = "Marlowe-private-xyz"  # a memory value, also inside a message
TITLE = "Greenhouse-title-secret-xyz"  # a conversation title
MESSAGE = "the basil plant is named Marlowe-private-xyz"
REPLY = "Lovely-reply-secret-xyz, I will remember that."
LIKE = "Rainy-days-secret-xyz"  # a many-key value
FORGOTTEN = "Forgotten-secret-xyz"  # forgotten: on no page, not even with the permission
RETRACTED = "Retracted-secret-xyz"
PRIVATE_STRINGS = (VALUE, TITLE, "basil plant is named", REPLY, LIKE, FORGOTTEN, RETRACTED)


@dataclass
class World:
    sam: object
    rowan: object
    conversation: object
    turn: object
    reply: object  # the assistant's message (REPLY)
    plant: object  # the basil_plant.name record (VALUE)
    like: object  # a user.likes record (LIKE)
    retracted: object
    forgotten: object
    tombstone: object
    rule: object
    default_rule: object
    decision: object
    job: object


def staff_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def support_group(db):
    from support.services import support_group_ensure

    return support_group_ensure()


@pytest.fixture
def support_user(support_group):
    user = UserFactory(username="support-alex", is_staff=True)
    user.groups.add(support_group)
    return user


@pytest.fixture
def privileged_user(support_group):
    user = UserFactory(username="support-priya", is_staff=True)
    user.groups.add(support_group)
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="support", codename="view_private_text")
    )
    return user


@pytest.fixture
def support(support_user):
    return staff_client(support_user)


@pytest.fixture
def privileged(privileged_user):
    return staff_client(privileged_user)


def build_world() -> World:
    sam = UserFactory(username="sam")
    rowan = CharacterFactory(slug="captain-rowan", name="Captain Rowan")
    conversation = conversation_create(user=sam, character=rowan, title=TITLE)
    turn = turn_create(
        conversation_id=conversation.pk, turn_key="t1", content=MESSAGE, scene="greenhouse"
    ).turn
    reply = turn_commit_reply(turn_id=turn.pk, content=REPLY).message
    plant = MemoryRecord.objects.get(user=sam, key="basil_plant.name")
    assert plant.value == VALUE
    like = memory_assert(
        user=sam,
        key="user.likes",
        value=LIKE,
        scope=Scope("user"),
        authority="user-confirmed",
        idempotency_key="likes-1",
    ).record
    retracted = memory_assert(user=sam, key="dog.name", value=RETRACTED, scope=Scope("user")).record
    memory_retract(record_id=retracted.id)
    forgotten = memory_assert(
        user=sam,
        key="cat.name",
        value=FORGOTTEN,
        scope=Scope("conversation", conversation=str(conversation.pk)),
    ).record
    tombstone = memory_forget(record_id=forgotten.id, user=sam)
    memory_correct(
        record_id=memory_assert(
            user=sam, key="user.lives_in", value="Boston", scope=Scope("user")
        ).record.id,
        value="Seattle",
        user=sam,
    )
    rule = rule_create(
        user=sam,
        capability="tone.playful",
        effect="allow",
        source="explicit-user",
        scope={"kind": "conversation", "conversation": str(conversation.pk)},
    )
    default_rule = rule_create(
        user=None,
        capability="media.image",
        effect="deny",
        source="product-default",
        scope={"kind": "global"},
    )
    ctx = load_context(
        {
            "user": "sam",
            "character": rowan.slug,
            "conversation": str(conversation.pk),
            "scene": "greenhouse",
        }
    )
    decision = decision_make(context=ctx, capability="media.voice", requested_by="assistant")
    job, _ = media_job_admit(
        context=ctx, capability="media.voice", requested_by="assistant", idempotency_key="job-1"
    )
    decision_answer(
        decision_id=job.decision_id, answer="allow", remember="once", media_job_id=job.pk
    )
    return World(
        sam=sam,
        rowan=rowan,
        conversation=conversation,
        turn=turn,
        reply=reply,
        plant=MemoryRecord.objects.get(pk=plant.pk),
        like=MemoryRecord.objects.get(pk=like.id),
        retracted=MemoryRecord.objects.get(pk=retracted.id),
        forgotten=MemoryRecord.objects.get(pk=forgotten.id),
        tombstone=tombstone,
        rule=rule,
        default_rule=default_rule,
        decision=decision,
        job=job,
    )


@pytest.fixture
def world(db, support_group) -> World:
    return build_world()


def assert_no_private_text(html: str, where: str) -> None:
    for secret in PRIVATE_STRINGS:
        assert secret not in html, f"{secret!r} shown on {where}"


@pytest.fixture
def viewer(support_group):
    """Staff who may view every model the admin has, use every support tool and act — but not
    see private text. If masking works for them, it works for everyone without the permission."""
    user = UserFactory(username="support-vera", is_staff=True)
    user.groups.add(support_group)
    user.user_permissions.add(
        *Permission.objects.filter(codename__startswith="view_").exclude(
            codename="view_private_text"
        )
    )
    return user


@pytest.fixture
def superuser(db):
    return UserFactory(username="root-rita", is_staff=True, is_superuser=True)


# --- reveals (SPEC §13 S1) -------------------------------------------------------------------

REASON = "Ticket 4711: the user asked why the companion forgot their plant."
NAME = "zebrina"  # a person's name inside a key: private text too (SPEC §12, §13)
PERSON_KEY = f"people.{NAME}.works_at"
PERSON_VALUE = "Acme-person-secret-xyz"
ALEX_VALUE = "Quillon-alex-secret-xyz"
ALEX_TITLE = "Alex-title-secret-xyz"
ALEX_MESSAGE = "my lamp is called Quillon-alex-secret-xyz"
ALEX_STRINGS = (ALEX_VALUE, ALEX_TITLE, "lamp is called")


def open_reveal(staff, user: str = "sam", reason: str = REASON):
    from support.reveals import reveal_open

    return reveal_open(staff=staff, user=user, reason=reason)


def assert_no_text_of(html: str, strings, where: str) -> None:
    for secret in strings:
        assert secret.casefold() not in html.casefold(), f"{secret!r} shown on {where}"


@dataclass
class Alex:
    user: object
    conversation: object
    turn: object
    record: object


@pytest.fixture
def alex(world) -> Alex:
    """A second user with private text of their own (a value, a title, a message)."""
    user = UserFactory(username="alex")
    conversation = conversation_create(user=user, character=world.rowan, title=ALEX_TITLE)
    turn = turn_create(conversation_id=conversation.pk, turn_key="a1", content=ALEX_MESSAGE).turn
    record = memory_assert(user=user, key="lamp.name", value=ALEX_VALUE, scope=Scope("user")).record
    return Alex(user, conversation, turn, MemoryRecord.objects.get(pk=record.id))


@pytest.fixture
def person_memory(world):
    """A memory of sam's whose key holds a person's name (`people.zebrina.works_at`)."""
    record = memory_assert(
        user=world.sam, key=PERSON_KEY, value=PERSON_VALUE, scope=Scope("user")
    ).record
    return MemoryRecord.objects.get(pk=record.id)


@pytest.fixture
def other_privileged_user(support_group):
    user = UserFactory(username="support-omar", is_staff=True)
    user.groups.add(support_group)
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="support", codename="view_private_text")
    )
    return user
