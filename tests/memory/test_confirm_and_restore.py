"""SPEC §2 Confirm and Correct (a correct with the same normalised value is a confirm; a confirm
of what the user already confirmed or corrected stores nothing), the undo of "no longer true"
(W10 then a new `user-confirmed` assert from now, W4 holding for old evidence), forgets made
by support (F1), and the user's time zone."""

import pytest

from config.errors import Conflict, ValidationError
from memory import forgetting, services
from memory.models import MemoryProfile, MemoryRecord, SlotRetraction, Tombstone
from memory.selectors.resolution import remembered_now
from tests.factories import MessageFactory

from .conftest import USER

pytestmark = pytest.mark.django_db


def put(user, key, value, **kwargs):
    kwargs.setdefault("scope", USER)
    return services.memory_assert(user=user, key=key, value=value, **kwargs).record


def active(user, key):
    return [r for r in remembered_now(user).active if r.key == key]


# ---------------------------------------------------------------------------------------------
# §2: confirm and correct


@pytest.mark.parametrize("authority", ["user-confirmed", "user-corrected"])
def test_it_stores_nothing_for_a_confirm_of_what_the_user_already_said(user, authority):
    """§2: a confirm of a record with authority user-confirmed or user-corrected stores
    nothing and answers `unchanged` with that record."""
    record = put(user, "dog.name", "Rex", authority=authority)
    before = MemoryRecord.objects.count()

    result = services.memory_confirm(record_id=record.id, user=user)

    assert (result.outcome, result.record.id, result.http_status) == ("unchanged", record.id, 200)
    assert MemoryRecord.objects.count() == before


@pytest.mark.parametrize("typed", ["Rex", "  rex ", "REX"])
def test_it_treats_a_correction_to_the_same_normalised_value_as_a_confirm(user, typed):
    """§2: a correct whose value equals the record's after casefold(strip(NFC())) is a confirm:
    the record's own value, `user-confirmed`, superseding it — not a `user-corrected` record."""
    record = put(user, "dog.name", "Rex", authority="rule-extracted")

    result = services.memory_correct(record_id=record.id, value=typed, user=user)

    assert result.outcome == "created"
    assert (result.record.value, result.record.authority, result.record.supersedes) == (
        "Rex",
        "user-confirmed",
        record.id,
    )
    assert MemoryRecord.objects.filter(user=user, authority="user-corrected").count() == 0


def test_it_normalises_unicode_before_comparing_a_correction(user):
    """§1: NFC before comparing — "é" composed and decomposed are the same value."""
    record = put(user, "user.lives_in", "Qu\u00e9bec", authority="rule-extracted")
    result = services.memory_correct(record_id=record.id, value="Que\u0301bec", user=user)
    assert (result.record.authority, result.record.value) == ("user-confirmed", "Qu\u00e9bec")


@pytest.mark.parametrize("authority", ["user-confirmed", "user-corrected"])
def test_it_stores_nothing_for_a_same_value_correction_of_what_the_user_already_said(
    user, authority
):
    """§2: correct with the same value = confirm; a confirm of the user's own word stores
    nothing (`unchanged`, 200, the record)."""
    record = put(user, "dog.name", "Rex", authority=authority)
    before = MemoryRecord.objects.count()

    result = services.memory_correct(record_id=record.id, value="rex", user=user)

    assert (result.outcome, result.record.id, result.http_status) == ("unchanged", record.id, 200)
    assert MemoryRecord.objects.count() == before


def test_it_confirms_a_same_value_correction_of_a_many_key_without_retracting(user):
    """§2: for a `many` key too, the same value is a confirm: the value slot is not retracted."""
    record = put(user, "user.likes", "jazz", authority="rule-extracted")

    result = services.memory_correct(record_id=record.id, value="Jazz", user=user)

    assert (result.record.authority, result.record.value) == ("user-confirmed", "jazz")
    assert not SlotRetraction.objects.exists()
    assert [r.value for r in active(user, "user.likes")] == ["jazz"]


def test_it_still_corrects_to_a_different_value(user):
    record = put(user, "dog.name", "Rex", authority="user-confirmed")
    result = services.memory_correct(record_id=record.id, value="Max", user=user)
    assert (result.outcome, result.record.authority, result.record.value) == (
        "created",
        "user-corrected",
        "Max",
    )


# ---------------------------------------------------------------------------------------------
# Undo "no longer true"


def test_it_asserts_the_value_again_as_the_users_from_now_on_undoing_no_longer_true(
    user, conversation
):
    """W10 closed the slot; the undo is new user evidence: `user-confirmed`, valid from now,
    superseding nothing (the old records keep their closed windows, so history shows the gap)."""
    message = MessageFactory(conversation=conversation)
    record = put(user, "dog.name", "Rex", authority="rule-extracted", sources=[str(message.pk)])
    retracted = services.memory_retract(record_id=record.id, user=user)

    result = services.memory_restore(record_id=record.id, user=user)

    new = result.record
    assert result.outcome == "created"
    assert (new.value, new.authority, new.supersedes, new.valid_until) == (
        "Rex",
        "user-confirmed",
        None,
        None,
    )
    assert new.valid_from > retracted.retracted_at
    old = MemoryRecord.objects.get(pk=record.id)
    assert old.valid_until == retracted.retracted_at and old.retracted_at == retracted.retracted_at
    assert [r.id for r in active(user, "dog.name")] == [new.id]


def test_it_still_lets_no_old_evidence_bring_back_a_restored_slots_old_value(user, conversation):
    """W4 holds after the undo: a stale summary from before the retraction is born closed."""
    message = MessageFactory(conversation=conversation)
    record = put(user, "dog.name", "Rex", authority="rule-extracted", sources=[str(message.pk)])
    services.memory_retract(record_id=record.id, user=user)
    services.memory_restore(record_id=record.id, user=user)

    stale = put(user, "dog.name", "Rexy", authority="rule-extracted", sources=[str(message.pk)])

    assert stale.valid_until is not None
    assert [r.value for r in active(user, "dog.name")] == ["Rex"]


def test_it_restores_one_value_of_a_many_key_on_undo(user):
    jazz = put(user, "user.likes", "jazz", authority="rule-extracted")
    put(user, "user.likes", "rain", authority="rule-extracted")
    services.memory_retract(record_id=jazz.id, user=user)

    services.memory_restore(record_id=jazz.id, user=user)

    assert sorted(r.value for r in active(user, "user.likes")) == ["jazz", "rain"]


def test_it_refuses_to_undo_what_was_not_marked_no_longer_true(user):
    record = put(user, "dog.name", "Rex")
    with pytest.raises(Conflict):
        services.memory_restore(record_id=record.id, user=user)


def test_it_refuses_to_undo_when_the_slot_holds_a_value_again(user):
    """A newer value was learned after the retraction: the undo would overrule it, so it is
    refused (the page no longer offers it)."""
    record = put(user, "dog.name", "Rex")
    services.memory_retract(record_id=record.id, user=user)
    put(user, "dog.name", "Max")
    with pytest.raises(Conflict):
        services.memory_restore(record_id=record.id, user=user)
    assert [r.value for r in active(user, "dog.name")] == ["Max"]


def test_it_refuses_to_undo_a_forgotten_memory(user):
    record = put(user, "dog.name", "Rex")
    services.memory_retract(record_id=record.id, user=user)
    forgetting.memory_forget(record_id=record.id, user=user)
    with pytest.raises(Conflict):
        services.memory_restore(record_id=record.id, user=user)
    assert not active(user, "dog.name")


# ---------------------------------------------------------------------------------------------
# Forget several; forgets made by support


def test_it_forgets_several_memories_at_once(user):
    rex = put(user, "dog.name", "Rex")
    jazz = put(user, "user.likes", "jazz")
    rain = put(user, "user.likes", "rain")

    tombstones = forgetting.memory_forget_selected(record_ids=[rex.id, jazz.id, rain.id], user=user)

    assert len(tombstones) == 3
    assert set(MemoryRecord.objects.filter(user=user).values_list("status", "value")) == {
        ("forgotten", "")
    }
    assert all(t.forgotten_by == "user" for t in Tombstone.objects.all())


def test_it_skips_what_an_earlier_forget_of_the_batch_covered(user, conversation):
    """A record already forgotten by another selected record's forget is skipped, not an error."""
    first = put(user, "dog.name", "Rex")
    services.memory_confirm(record_id=first.id, user=user)
    current = active(user, "dog.name")[0]
    tombstones = forgetting.memory_forget_selected(record_ids=[current.id, first.id], user=user)
    assert len(tombstones) == 1


def test_it_never_touches_another_users_memory_when_forgetting_several(user, django_user_model):
    from config.errors import NotFound

    other = django_user_model.objects.create(username="alex")
    theirs = put(other, "dog.name", "Bolt")
    mine = put(user, "dog.name", "Rex")
    with pytest.raises(NotFound):
        forgetting.memory_forget_selected(record_ids=[mine.id, theirs.id], user=user)
    assert not Tombstone.objects.exists()
    assert MemoryRecord.objects.get(pk=theirs.id).value == "Bolt"
    assert MemoryRecord.objects.get(pk=mine.id).value == "Rex"


def test_it_records_whether_support_made_a_forget(user):
    """F1: the tombstone says who forgot (the user or support on the user's behalf), and
    nothing of why."""
    a = put(user, "dog.name", "Rex")
    b = put(user, "cat.name", "Tom")
    forgetting.memory_forget(record_id=a.id, user=user)
    forgetting.memory_forget(record_id=b.id, user=user, by="support")
    assert dict(Tombstone.objects.values_list("key", "forgotten_by")) == {
        "dog.name": "user",
        "cat.name": "support",
    }


def test_it_refuses_a_forget_by_someone_unknown(user):
    record = put(user, "dog.name", "Rex")
    with pytest.raises(ValidationError):
        forgetting.memory_forget(record_id=record.id, user=user, by="admin")
    assert not Tombstone.objects.exists()


# ---------------------------------------------------------------------------------------------
# The user's time zone


def test_it_stores_a_time_zone_and_clears_it(user):
    services.profile_set_time_zone(user=user, time_zone="Europe/Berlin")
    assert MemoryProfile.objects.get(user=user).time_zone == "Europe/Berlin"
    services.profile_set_time_zone(user=user, time_zone="")
    assert MemoryProfile.objects.get(user=user).time_zone == ""


@pytest.mark.parametrize("bad", ["Mars/Olympus", "europe/berlin ", "../etc/passwd", "x" * 80, None])
def test_it_refuses_an_unknown_time_zone(user, bad):
    with pytest.raises(ValidationError) as raised:
        services.profile_set_time_zone(user=user, time_zone=bad)
    assert "time_zone" in raised.value.errors
    assert not MemoryProfile.objects.filter(user=user).exclude(time_zone="").exists()
