"""Memory writers (SPEC §2, §4): each test names the rule it proves."""

from datetime import datetime, timedelta

import pytest
from django.db.models import Q

from config.errors import AuthorityConflict, Conflict, IdempotencyKeyReused, ValidationError
from conversations.scopes import Scope
from conversations.selectors import load_context
from memory import forgetting, services
from memory.models import IdempotencyRecord, MemoryRecord, MemorySource, SlotRetraction, Tombstone
from memory.selectors.resolution import ContextResolution
from tests.factories import ConversationFactory, MessageFactory, UserFactory, at

from .conftest import USER

pytestmark = pytest.mark.django_db


def resolve(user, conversation=None, *, now=None, scene=None, keys=None):
    data = {"user": user.username}
    if conversation is not None:
        data["conversation"] = str(conversation.pk)
    if scene:
        data["scene"] = scene
    if now:
        data["now"] = datetime.fromisoformat(now.replace("Z", "+00:00"))
    return ContextResolution(load_context(data), keys)


def active_values(user, key, **kwargs):
    return [r.value for r in resolve(user, **kwargs).resolution.active if r.key == key]


def put(user, key, value, **kwargs):
    kwargs.setdefault("scope", USER)
    return services.memory_assert(user=user, key=key, value=value, **kwargs)


# --- W1 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"key": "Bad Key!"}, "key"),
        ({"key": ".pet.name"}, "key"),
        ({"key": "pet..name"}, "key"),
        ({"key": "pet.name."}, "key"),
        ({"key": "x" * 121}, "key"),
        ({"value": ""}, "value"),
        ({"value": "   "}, "value"),
        ({"value": "x" * 2001}, "value"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": -0.1}, "confidence"),
        (
            {"valid_from": at("2026-08-02T00:00"), "valid_until": at("2026-08-01T00:00")},
            "valid_until",
        ),
        (
            {"valid_from": at("2026-08-02T00:00"), "valid_until": at("2026-08-02T00:00")},
            "valid_until",
        ),
        ({"scope": Scope("character", character="nobody")}, "scope.character"),
        ({"authority": "god-given"}, "authority"),
    ],
)
def test_it_refuses_invalid_input_naming_the_field_and_stores_nothing(user, kwargs, field):
    """W1: bad input → validation_error naming the field; nothing is stored."""
    args = {"key": "pet.name", "value": "Rex", **kwargs}
    with pytest.raises(ValidationError) as info:
        put(user, **args)
    assert field in info.value.errors
    assert MemoryRecord.objects.count() == 0


def test_it_refuses_a_conversation_or_source_of_another_user(user):
    """W1: a conversation or a source message that belongs to another user is invalid."""
    other = ConversationFactory(user=UserFactory(username="mallory"))
    foreign = MessageFactory(conversation=other)
    with pytest.raises(ValidationError) as info:
        put(user, "pet.name", "Rex", scope=Scope("conversation", conversation=str(other.pk)))
    assert "scope.conversation" in info.value.errors
    with pytest.raises(ValidationError) as info:
        put(user, "pet.name", "Rex", sources=[str(foreign.pk)])
    assert "sources" in info.value.errors
    assert MemoryRecord.objects.count() == 0


def test_it_refuses_a_supersedes_outside_the_slot(user):
    """W1: `supersedes` must name a record of the same slot."""
    other = put(user, "dog.name", "Rex").record
    with pytest.raises(ValidationError) as info:
        put(user, "pet.name", "Tom", supersedes=other.id)
    assert "supersedes" in info.value.errors
    assert MemoryRecord.objects.count() == 1


# --- W2 -----------------------------------------------------------------------------------


def test_it_replays_the_same_idempotency_key_with_the_record_as_it_is_now(user):
    """W2: same key and payload → `replayed` with the record as it is now; nothing new."""
    first = put(user, "pet.name", "Rex", idempotency_key="k-1")
    again = put(user, "pet.name", "Rex", idempotency_key="k-1")
    assert (first.outcome, again.outcome) == ("created", "replayed")
    assert again.record.id == first.record.id
    assert MemoryRecord.objects.count() == 1


def test_it_refuses_the_same_idempotency_key_with_another_payload(user):
    """W2: the same key with another payload → 409 idempotency_key_reused."""
    put(user, "pet.name", "Rex", idempotency_key="k-1")
    with pytest.raises(IdempotencyKeyReused):
        put(user, "pet.name", "Max", idempotency_key="k-1")
    assert MemoryRecord.objects.count() == 1


def test_it_keeps_an_hmac_of_the_payload_never_the_payload(user):
    """W2: the idempotency table holds an HMAC, not the value."""
    put(user, "pet.name", "Rexington", idempotency_key="k-1")
    row = IdempotencyRecord.objects.get()
    assert "Rexington" not in str(row.__dict__)
    assert len(row.payload_hmac) == 64


def test_it_replays_an_erased_record_after_a_forget(user):
    """W2: a replay shows the record as it is now — erased if it was forgotten since."""
    first = put(user, "pet.name", "Rex", idempotency_key="k-1")
    forgetting.memory_forget(record_id=first.record.id)
    again = put(user, "pet.name", "Rex", idempotency_key="k-1")
    assert again.outcome == "replayed"
    assert again.record.value == "" and again.record.status == "forgotten"


def test_it_stores_one_record_for_repeated_retries_of_one_correction(user):
    """Uncomfortable case: retries inserting the same logical correction store one record."""
    rex = put(user, "pet.name", "Rex").record
    results = [
        put(
            user,
            "pet.name",
            "Max",
            authority="user-corrected",
            supersedes=rex.id,
            idempotency_key="fix-1",
        )
        for _ in range(3)
    ]
    assert [r.outcome for r in results] == ["created", "replayed", "replayed"]
    assert MemoryRecord.objects.filter(value="Max").count() == 1
    # Without a key, W5 makes the same retry a no-op as well.
    plain = put(user, "pet.name", "Max", authority="user-corrected")
    assert plain.outcome == "unchanged"
    assert MemoryRecord.objects.filter(value="Max").count() == 1


# --- W3 / F1–F4 ---------------------------------------------------------------------------


def test_it_blocks_a_write_from_old_evidence_after_a_forget_and_stores_nothing(user, conversation):
    """W3/F3: a summary written after the forget from older messages is blocked; nothing is
    stored, not even the value."""
    old = MessageFactory(conversation=conversation, content="I live in Boston.")
    first = put(user, "user.lives_in", "Boston", sources=[str(old.pk)], authority="rule-extracted")
    forgetting.memory_forget(record_id=first.record.id)
    summary = put(
        user, "user.lives_in", "Boston", sources=[str(old.pk)], authority="model-inferred"
    )
    assert (summary.outcome, summary.reason, summary.record) == ("blocked", "forgotten", None)
    assert not MemoryRecord.objects.filter(value="Boston").exists()


def test_it_lets_the_user_say_it_again_after_the_forget(user, conversation):
    """F3: new evidence after the forget is not blocked."""
    first = put(user, "user.lives_in", "Boston")
    forgetting.memory_forget(record_id=first.record.id)
    again = MessageFactory(conversation=conversation, content="I live in Boston.")
    result = put(user, "user.lives_in", "Boston", sources=[str(again.pk)])
    assert result.outcome == "created"
    assert active_values(user, "user.lives_in") == ["Boston"]


def test_it_purges_every_covered_record_into_a_skeleton(user, conversation):
    """F1/F2: the tombstone holds no value; covered records become skeletons with the value
    erased and status `forgotten` since the forget. F6: the skeleton keeps its source links
    (they hold no value) and the forget withholds their messages."""
    msg = MessageFactory(conversation=conversation)
    harbor = put(user, "basil_plant.name", "Harbor", sources=[str(msg.pk)]).record
    marlowe = services.memory_correct(record_id=harbor.id, value="Marlowe").record
    tombstone = forgetting.memory_forget(record_id=marlowe.id)
    assert tombstone.value_hash is None
    assert "Marlowe" not in str(tombstone.__dict__) and "Harbor" not in str(tombstone.__dict__)
    rows = MemoryRecord.objects.filter(key="basil_plant.name")
    assert {(r.status, r.value, r.status_since) for r in rows} == {
        ("forgotten", "", tombstone.forgotten_at)
    }
    assert set(
        MemorySource.objects.filter(memory__in=rows).values_list("message_id", flat=True)
    ) == {msg.pk}
    assert tombstone.withheld_messages == 1
    assert set(tombstone.withholdings.values_list("message_id", flat=True)) == {msg.pk}
    assert active_values(user, "basil_plant.name") == []


def test_it_forgets_everywhere_across_scopes_present_and_future(user, conversation, character):
    """F1: scope `*` covers the key in every scope of the user, present and future."""
    put(user, "user.lives_in", "Boston")
    in_conv = put(
        user,
        "user.lives_in",
        "Paris",
        scope=Scope("conversation", conversation=str(conversation.pk)),
    )
    tombstone = forgetting.memory_forget(record_id=in_conv.record.id, everywhere=True)
    assert tombstone.scope_id == "*"
    assert set(MemoryRecord.objects.values_list("status", flat=True)) == {"forgotten"}
    later = put(
        user,
        "user.lives_in",
        "Boston",
        scope=Scope("character", character=character.slug),
        valid_from=at("2020-01-01T00:00"),
    )
    assert later.outcome == "blocked"


def test_it_forgets_one_value_of_a_many_key_by_its_keyed_hash(user):
    """F1/F2: a value-level forget of a `many` key blocks that value only, and stores an HMAC
    of the normalised value, never the value."""
    jazz = put(user, "user.likes", "Jazz").record
    put(user, "user.likes", "rainy days")
    tombstone = forgetting.memory_forget(record_id=jazz.id)
    assert tombstone.value_hash and "jazz" not in tombstone.value_hash.lower()
    assert active_values(user, "user.likes") == ["rainy days"]
    blocked = put(user, "user.likes", "  JAZZ ", valid_from=at("2020-01-01T00:00"))
    assert blocked.outcome == "blocked"
    assert put(user, "user.likes", "tea", valid_from=at("2020-01-01T00:00")).outcome == "created"


def test_it_forgets_every_value_of_a_many_key_with_whole_key(user):
    """F2: `whole_key` forgets every value of the key."""
    jazz = put(user, "user.likes", "Jazz").record
    put(user, "user.likes", "rainy days")
    tombstone = forgetting.memory_forget(record_id=jazz.id, whole_key=True)
    assert tombstone.value_hash is None
    assert active_values(user, "user.likes") == []


def test_it_lets_it_learn_again_after_the_tombstone_is_deleted(user, conversation):
    """F4: erased values do not come back, but old evidence may create the memory again."""
    old = MessageFactory(conversation=conversation)
    first = put(user, "pet.name", "Rex", sources=[str(old.pk)])
    tombstone = forgetting.memory_forget(record_id=first.record.id)
    forgetting.tombstone_delete(tombstone_id=tombstone.id)
    assert not Tombstone.objects.exists()
    assert MemoryRecord.objects.get(pk=first.record.id).value == ""
    again = put(user, "pet.name", "Rex", sources=[str(old.pk)])
    assert again.outcome == "created"
    assert active_values(user, "pet.name") == ["Rex"]


def test_it_excludes_a_blocked_record_at_resolve_too(user, conversation):
    """R4/F3: a stored record that a tombstone covers is excluded `forgotten` even if it was
    never purged (e.g. it arrived through an import)."""
    old = MessageFactory(conversation=conversation)
    record = put(user, "pet.name", "Rex", sources=[str(old.pk)]).record
    from config.clock import db_now

    Tombstone.objects.create(
        user=user,
        scope_id="*",
        key="pet.name",
        forgotten_at=db_now(),
        blocks_sources_before=db_now(),
    )
    result = resolve(user)
    assert [(e.id, e.reason) for e in result.resolution.excluded] == [(record.id, "forgotten")]


# --- W4 / W10 -----------------------------------------------------------------------------


def test_it_retracts_a_slot_and_old_evidence_never_brings_it_back(user, conversation):
    """W10 closes every open record of the slot at the retraction; W4 stores later writes
    from older evidence born closed."""
    old = MessageFactory(conversation=conversation, content="My dog's name is Rex.")
    rex = put(user, "dog.name", "Rex", sources=[str(old.pk)]).record
    max_ = put(user, "dog.name", "Max").record
    result = services.memory_retract(record_id=max_.id)
    rows = {str(r.id): r for r in MemoryRecord.objects.filter(key="dog.name")}
    for rid in (rex.id, max_.id):
        assert rows[rid].retracted_at == result.retracted_at
        assert rows[rid].valid_until == result.retracted_at
    assert active_values(user, "dog.name") == []
    # The same old fact again is merged into its closed record (W5) and stays closed.
    assert put(user, "dog.name", "Rex", sources=[str(old.pk)]).outcome == "unchanged"
    late = put(user, "dog.name", "Buddy", sources=[str(old.pk)])
    assert late.outcome == "created"
    assert late.record.valid_until == max(late.record.valid_from, result.retracted_at)
    assert active_values(user, "dog.name") == []
    fresh = put(user, "dog.name", "Bolt")
    assert fresh.record.valid_until is None
    assert active_values(user, "dog.name") == ["Bolt"]


def test_it_gives_a_record_that_has_not_started_an_empty_window_on_retract(user):
    """W10: a record that has not started yet gets valid_until = valid_from."""
    future = put(user, "dog.name", "Rex", valid_from=at("2099-01-01T00:00")).record
    services.memory_retract(record_id=future.id)
    row = MemoryRecord.objects.get(pk=future.id)
    assert row.valid_until == row.valid_from == at("2099-01-01T00:00")


# --- W5 -----------------------------------------------------------------------------------


def test_it_merges_provenance_for_an_unchanged_value(user, conversation):
    """W5: same value, covered window, authority not higher → nothing new; sources are added
    and confidence becomes the max."""
    m1, m2 = MessageFactory(conversation=conversation), MessageFactory(conversation=conversation)
    first = put(
        user, "pet.name", "Rex", sources=[str(m1.pk)], confidence=0.6, authority="rule-extracted"
    )
    second = put(
        user, "pet.name", " rex ", sources=[str(m2.pk)], confidence=0.9, authority="model-inferred"
    )
    assert second.outcome == "unchanged"
    assert second.record.id == first.record.id
    assert set(second.record.sources) == {str(m1.pk), str(m2.pk)}
    assert second.record.confidence == 0.9
    assert MemoryRecord.objects.count() == 1


def test_it_stores_the_same_value_with_a_higher_authority(user):
    """W5 needs the new authority not higher; a user confirmation is a new record."""
    put(user, "pet.name", "Rex", authority="model-inferred")
    result = put(user, "pet.name", "Rex", authority="user-confirmed")
    assert result.outcome == "created"
    assert result.record.supersedes is not None


# --- W6 / W7 ------------------------------------------------------------------------------


def test_it_supersedes_the_winner_with_a_new_value(user):
    """W6: a new open-ended value of a `one` key supersedes the slot's winner."""
    harbor = put(user, "basil_plant.name", "Harbor").record
    marlowe = put(user, "basil_plant.name", "Marlowe").record
    assert (marlowe.supersedes, marlowe.version) == (harbor.id, 2)
    result = resolve(user)
    assert [r.value for r in result.resolution.active] == ["Marlowe"]
    assert {(e.id, e.reason) for e in result.resolution.excluded} == {(harbor.id, "superseded")}


def test_it_refuses_an_explicit_supersedes_over_a_higher_authority(user):
    """W6: a model inference can never overrule what the user corrected → authority_conflict."""
    corrected = put(user, "pet.name", "Max", authority="user-corrected").record
    with pytest.raises(AuthorityConflict):
        put(user, "pet.name", "Rex", authority="model-inferred", supersedes=corrected.id)
    assert MemoryRecord.objects.count() == 1


def test_it_keeps_a_lower_authority_value_without_letting_it_win(user):
    """W7: the lower-authority value is stored (history shows it), supersedes nothing and
    loses at R6 as `lower-precedence`."""
    corrected = put(user, "pet.name", "Max", authority="user-corrected").record
    guess = put(user, "pet.name", "Rex", authority="model-inferred")
    assert guess.outcome == "created" and guess.record.supersedes is None
    result = resolve(user)
    assert [r.id for r in result.resolution.active] == [corrected.id]
    assert [(e.id, e.reason) for e in result.resolution.excluded] == [
        (guess.record.id, "lower-precedence")
    ]


def test_it_resolves_a_correction_chain_of_four_versions(user):
    """Uncomfortable case: a chain of corrections leaves only the last one active."""
    ids = [put(user, "pet.name", name).record.id for name in ("Rex", "Max", "Bolt", "Ace")]
    result = resolve(user)
    assert [r.value for r in result.resolution.active] == ["Ace"]
    assert sorted(e.id for e in result.resolution.excluded) == sorted(ids[:3])
    assert {e.reason for e in result.resolution.excluded} == {"superseded"}
    assert list(MemoryRecord.objects.order_by("version").values_list("version", flat=True)) == [
        1,
        2,
        3,
        4,
    ]


# --- W8 -----------------------------------------------------------------------------------


def test_it_numbers_versions_per_scoped_key(user, conversation):
    """W8: version = 1 + the highest of the scoped key; other scopes count on their own."""
    assert put(user, "pet.name", "Rex").record.version == 1
    assert put(user, "pet.name", "Max").record.version == 2
    conv = Scope("conversation", conversation=str(conversation.pk))
    assert put(user, "pet.name", "Bolt", scope=conv).record.version == 1


# --- W9 -----------------------------------------------------------------------------------


def test_it_never_lets_a_late_older_fact_beat_a_newer_one(user):
    """W9: a fact that arrives late with an older valid_from loses to the newer one."""
    put(user, "user.lives_in", "Seattle", valid_from=at("2026-08-10T00:00"))
    late = put(user, "user.lives_in", "Boston", valid_from=at("2026-08-01T00:00"))
    assert late.outcome == "created"
    assert active_values(user, "user.lives_in") == ["Seattle"]
    assert active_values(user, "user.lives_in", now="2026-08-05T00:00:00Z") == ["Boston"]


def test_it_dates_a_stale_summary_by_its_old_sources(user, conversation):
    """W9: a summary carrying old sources gets their old time as valid_from."""
    old = MessageFactory(conversation=conversation, created_at=at("2026-08-01T09:00"))
    put(user, "user.lives_in", "Seattle", valid_from=at("2026-08-10T00:00"))
    summary = put(user, "user.lives_in", "Boston", sources=[str(old.pk)]).record
    assert summary.valid_from == at("2026-08-01T09:00")
    assert summary.evidence_time == at("2026-08-01T09:00")
    assert active_values(user, "user.lives_in") == ["Seattle"]


def test_it_applies_a_temporary_override_only_inside_its_window(user):
    """W9: a correction with its own valid_until hides what it supersedes only inside its
    window; then the older value is current again (an expired correction)."""
    home = put(user, "user.lives_in", "Boston", valid_from=at("2026-01-01T00:00")).record
    trip = put(
        user,
        "user.lives_in",
        "Lisbon",
        authority="user-corrected",
        supersedes=home.id,
        valid_from=at("2026-08-01T00:00"),
        valid_until=at("2026-08-15T00:00"),
    ).record
    assert active_values(user, "user.lives_in", now="2026-08-05T00:00:00Z") == ["Lisbon"]
    assert active_values(user, "user.lives_in", now="2026-08-15T00:00:00Z") == ["Boston"]
    after = resolve(user, now="2026-09-01T00:00:00Z")
    assert {(e.id, e.reason) for e in after.resolution.excluded} == {(trip.id, "expired")}


# --- Confirm / correct --------------------------------------------------------------------


def test_it_confirms_a_current_memory(user):
    """§2 Confirm: same value, user-confirmed, valid from now, superseding it."""
    rex = put(user, "pet.name", "Rex", authority="rule-extracted").record
    confirmed = services.memory_confirm(record_id=rex.id)
    assert confirmed.outcome == "created"
    assert (confirmed.record.value, confirmed.record.authority, confirmed.record.supersedes) == (
        "Rex",
        "user-confirmed",
        rex.id,
    )


def test_it_refuses_to_confirm_a_memory_that_is_not_current(user):
    """§2 Confirm is only for a record active now."""
    rex = put(user, "pet.name", "Rex").record
    put(user, "pet.name", "Max")
    with pytest.raises(Conflict):
        services.memory_confirm(record_id=rex.id)


def test_it_corrects_a_many_key_by_retracting_the_old_value(user):
    """§2 Correct, `many` key: the old value slot is retracted and the new value asserted."""
    jazz = put(user, "user.likes", "jazz").record
    put(user, "user.likes", "tea")
    services.memory_correct(record_id=jazz.id, value="blues")
    assert sorted(active_values(user, "user.likes")) == ["blues", "tea"]
    assert SlotRetraction.objects.count() == 1
    assert "jazz" not in SlotRetraction.objects.get().value_hash


def test_it_scopes_a_correction_to_the_corrected_record(user, conversation):
    """§2 Correct writes in the record's scope."""
    conv = Scope("conversation", conversation=str(conversation.pk))
    rec = put(user, "pet.name", "Rex", scope=conv).record
    corrected = services.memory_correct(record_id=rec.id, value="Max").record
    assert corrected.scope == conv and corrected.authority == "user-corrected"


# --- W12 ----------------------------------------------------------------------------------


def test_it_normalises_statuses_idempotently_without_changing_resolutions(user):
    """W12: the normaliser writes `expired` and `superseded`, is idempotent, and never changes
    what the resolver answers."""
    put(user, "pet.name", "Rex", valid_from=at("2026-01-01T00:00"))
    put(user, "pet.name", "Max", valid_from=at("2026-02-01T00:00"))
    put(
        user,
        "dog.name",
        "Bolt",
        valid_from=at("2026-01-01T00:00"),
        valid_until=at("2026-03-01T00:00"),
    )
    times = ["2026-01-15T00:00:00Z", "2026-02-15T00:00:00Z", "2026-04-01T00:00:00Z"]

    def snapshot():
        out = []
        for now in times:
            r = resolve(user, now=now).resolution
            out.append(([a.id for a in r.active], [(e.id, e.reason) for e in r.excluded]))
        return out

    before = snapshot()
    changed = services.memory_normalise()
    assert changed == 2
    assert set(MemoryRecord.objects.values_list("status", flat=True)) == {
        "active",
        "superseded",
        "expired",
    }
    assert snapshot() == before
    assert services.memory_normalise() == 0


def test_it_ignores_the_worker_clock_when_now_is_given(user, monkeypatch):
    """§0: the result depends only on stored state and the given `now`, whatever a worker's
    clock says."""
    put(user, "pet.name", "Rex", valid_from=at("2026-08-01T00:00"))
    expected = active_values(user, "pet.name", now="2026-08-05T00:00:00Z")
    import django.utils.timezone as tz

    monkeypatch.setattr(tz, "now", lambda: at("1999-01-01T00:00") - timedelta(days=1))
    assert active_values(user, "pet.name", now="2026-08-05T00:00:00Z") == expected == ["Rex"]


def test_it_keeps_other_users_apart(user):
    """§0: every query filters by user first."""
    other = UserFactory(username="mallory")
    put(other, "pet.name", "Spy")
    put(user, "pet.name", "Rex")
    assert active_values(user, "pet.name") == ["Rex"]
    assert MemoryRecord.objects.filter(Q(user=other)).count() == 1
