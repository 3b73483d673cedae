"""Policy services (SPEC §6 D1–D10): rules, versions, decisions and answers, on the
database with a controllable clock."""

import pytest
from django.db import IntegrityError, transaction

from config.errors import Conflict, NotFound, ValidationError
from policy import selectors, services
from policy.models import DecisionLog, MediaJob, PolicyRule
from tests.factories import ConversationFactory, UserFactory, at
from tests.policy.helpers import admit, allow_voice, ask_voice, version_of

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# Rules (SPEC §6) and D7


def test_it_creates_a_rule_at_version_1_valid_from_the_database_clock(wren, capabilities, clock):
    rule = allow_voice(wren)
    assert (rule.version, rule.valid_from, rule.revoked_at, rule.created_at) == (
        1,
        clock.now,
        None,
        clock.now,
    )
    assert rule.to_domain().scope.kind == "global"


def test_it_bumps_only_the_users_version_when_a_users_rule_is_created_or_revoked_d7(
    wren, capabilities
):
    assert version_of(wren) == {"defaults": 0, "user": 0}
    rule = allow_voice(wren)
    assert version_of(wren) == {"defaults": 0, "user": 1}
    services.rule_revoke(rule_id=rule.pk)
    assert version_of(wren) == {"defaults": 0, "user": 2}
    assert version_of(UserFactory()) == {"defaults": 0, "user": 0}


def test_it_bumps_the_defaults_version_for_everyone_on_a_product_default_d7(
    wren, capabilities, rowan
):
    rule = services.rule_create(
        user=None,
        capability="tone.playful",
        effect="deny",
        source="product-default",
        scope={"kind": "character", "character": "rowan"},
    )
    assert version_of(wren) == {"defaults": 1, "user": 0}
    services.rule_revoke(rule_id=rule.pk)
    assert version_of(UserFactory()) == {"defaults": 2, "user": 0}


def test_it_changes_nothing_the_second_time_a_rule_is_revoked_d7(wren, capabilities, clock):
    rule = allow_voice(wren)
    first = services.rule_revoke(rule_id=rule.pk)
    clock.advance(hours=1)
    again = services.rule_revoke(rule_id=rule.pk)
    assert again.revoked_at == first.revoked_at == at("2026-08-05T12:00")
    assert version_of(wren)["user"] == 2


def test_it_revokes_a_changed_rule_and_creates_its_successor_with_one_bump(
    wren, capabilities, clock
):
    rule = allow_voice(wren)
    clock.advance(minutes=5)
    successor = services.rule_change(rule_id=rule.pk, effect="deny")
    rule.refresh_from_db()
    assert rule.revoked_at == clock.now
    assert (successor.version, successor.effect, successor.supersedes_id) == (2, "deny", rule.pk)
    assert successor.valid_from == clock.now
    assert version_of(wren)["user"] == 2
    with pytest.raises(Conflict):
        services.rule_change(rule_id=rule.pk, effect="allow")


def test_it_does_not_find_another_users_rule_to_change_for_an_owner(wren, capabilities):
    rule = allow_voice(wren)
    with pytest.raises(NotFound):
        services.rule_change(rule_id=rule.pk, owner=UserFactory(), effect="deny")
    with pytest.raises(NotFound):
        services.rule_revoke(rule_id="00000000-0000-0000-0000-000000000000")


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"capability": "media.smell"}, "capability"),
        ({"effect": "maybe"}, "effect"),
        ({"source": "product-default"}, "source"),
        ({"requested_by": "robot"}, "requested_by"),
        ({"scope": {"kind": "user"}}, "scope.kind"),
        ({"scope": {"kind": "character"}}, "scope.character"),
        ({"scope": {"kind": "character", "character": "nobody"}}, "scope.character"),
        ({"scope": {"kind": "global", "scene": "x"}}, "scope.scene"),
        (
            {
                "scope": {
                    "kind": "scene",
                    "conversation": "00000000-0000-0000-0000-000000000000",
                    "scene": "x",
                }
            },
            "scope.conversation",
        ),
        (
            {"valid_from": at("2026-08-05T12:00"), "valid_until": at("2026-08-05T12:00")},
            "valid_until",
        ),
    ],
)
def test_it_refuses_a_bad_rule_naming_the_field(wren, capabilities, changes, field):
    with pytest.raises(ValidationError) as caught:
        allow_voice(wren, **changes)
    assert field in caught.value.errors


def test_it_refuses_a_rule_naming_another_users_conversation(wren, capabilities):
    theirs = ConversationFactory()
    with pytest.raises(ValidationError) as caught:
        allow_voice(wren, scope={"kind": "conversation", "conversation": str(theirs.pk)})
    assert "scope.conversation" in caught.value.errors


def test_it_gives_a_product_default_no_user_and_a_global_or_character_scope(
    capabilities, conversation
):
    with pytest.raises(ValidationError) as caught:
        services.rule_create(
            user=None,
            capability="media.voice",
            effect="deny",
            source="product-default",
            scope={"kind": "conversation", "conversation": str(conversation.pk)},
        )
    assert "scope.kind" in caught.value.errors
    with pytest.raises(ValidationError) as caught:
        services.rule_create(
            user=None,
            capability="media.voice",
            effect="deny",
            source="explicit-user",
            scope={"kind": "global"},
        )
    assert "source" in caught.value.errors


def test_it_lets_the_database_refuse_a_product_default_with_a_conversation_scope(
    capabilities, conversation
):
    with pytest.raises(IntegrityError), transaction.atomic():
        PolicyRule.objects.create(
            user=None,
            capability_id="media.voice",
            effect="deny",
            source="product-default",
            scope_kind="conversation",
            conversation=conversation,
            valid_from=at("2026-08-05T12:00"),
            created_at=at("2026-08-05T12:00"),
        )


def test_it_lets_the_database_refuse_a_scope_of_the_wrong_shape(wren, capabilities, conversation):
    with pytest.raises(IntegrityError), transaction.atomic():
        PolicyRule.objects.create(
            user=wren,
            capability_id="media.voice",
            effect="deny",
            source="explicit-user",
            scope_kind="scene",
            conversation=conversation,
            scene=None,
            valid_from=at("2026-08-05T12:00"),
            created_at=at("2026-08-05T12:00"),
        )


# ---------------------------------------------------------------------------------------------
# Decisions (D1–D7, D10)


def test_it_decides_ask_with_the_question_when_there_is_no_rule_d2(conversation, context_of):
    outcome = services.decision_make(
        context=context_of(conversation), capability="media.voice", requested_by="user"
    )
    assert (outcome.decision.effect, outcome.decision.reason) == ("ask", "no-applicable-rule")
    assert outcome.question == "May I send you voice messages?"


def test_it_returns_the_policy_version_with_each_decision_d7(wren, conversation, context_of):
    allow_voice(wren)
    outcome = services.decision_make(
        context=context_of(conversation), capability="media.voice", requested_by="user"
    )
    assert outcome.policy_version.as_dict() == {"defaults": 0, "user": 1}
    assert outcome.decision.effect == "allow"


def test_it_never_applies_a_rule_of_another_user_d1(wren, conversation, context_of):
    allow_voice(UserFactory())
    outcome = services.decision_make(
        context=context_of(conversation), capability="media.voice", requested_by="user"
    )
    assert outcome.decision.effect == "ask"


def test_it_logs_every_decision_with_ids_only_d10(wren, conversation, context_of, clock):
    rule = allow_voice(wren)
    outcome = services.decision_make(
        context=context_of(conversation, scene="greenhouse"),
        capability="media.voice",
        requested_by="assistant",
    )
    row = DecisionLog.objects.get(pk=outcome.decision_id)
    assert (row.user, row.capability, row.requested_by, row.effect, row.reason) == (
        wren,
        "media.voice",
        "assistant",
        "allow",
        "explicit-rule",
    )
    assert row.rule_ids == [str(rule.pk)]
    assert (row.defaults_version, row.user_version) == (0, 1)
    assert row.scope_ids == [
        "user:wren",
        "character:wren:rowan",
        f"conversation:{conversation.pk}",
        f"scene:{conversation.pk}:greenhouse",
    ]
    assert row.decided_at == clock.now


def test_it_decides_at_the_contexts_now_d1(wren, conversation, context_of):
    allow_voice(wren, valid_from=at("2026-08-01T00:00"), valid_until=at("2026-08-02T00:00"))
    before = services.decision_make(
        context=context_of(conversation, now=at("2026-08-01T23:59")),
        capability="media.voice",
        requested_by="user",
    )
    at_end = services.decision_make(
        context=context_of(conversation, now=at("2026-08-02T00:00")),
        capability="media.voice",
        requested_by="user",
    )
    assert (before.decision.effect, at_end.decision.effect) == ("allow", "ask")


def test_it_loads_every_rule_of_the_capability_to_explain(wren, conversation, context_of, marlowe):
    kept = allow_voice(wren, scope={"kind": "character", "character": "marlowe"})
    outcome = services.decision_make(
        context=context_of(conversation),
        capability="media.voice",
        requested_by="user",
        explain=True,
    )
    assert outcome.explanation.reason_of(str(kept.pk)) == "scope"


def test_it_decides_for_several_capabilities_from_one_rule_query(
    wren, conversation, context_of, clock, django_assert_num_queries
):
    allow_voice(wren)
    context = context_of(conversation, now=at("2026-08-06T00:00"))
    with django_assert_num_queries(6):  # capabilities, savepoint, version, rules, log, release
        outcomes = services.decisions_make(
            context=context, capabilities=["media.voice", "tone.playful"]
        )
    assert [o.decision.effect for o in outcomes] == ["allow", "ask"]


def test_it_refuses_an_unknown_capability_naming_the_field(conversation, context_of):
    with pytest.raises(ValidationError) as caught:
        services.decision_make(
            context=context_of(conversation), capability="media.smell", requested_by="user"
        )
    assert "capability" in caught.value.errors


# ---------------------------------------------------------------------------------------------
# Answers (D8)


def test_it_applies_an_answer_once_to_the_decision_only_d8(conversation, context_of):
    asked = ask_voice(conversation, context_of)
    outcome = services.decision_answer(
        decision_id=asked.decision_id, answer="allow", remember="once"
    )
    assert (outcome.effect, outcome.rule, outcome.replayed) == ("allow", None, False)
    assert ask_voice(conversation, context_of).decision.effect == "ask"
    assert version_of(conversation.user)["user"] == 0


@pytest.mark.parametrize(
    "remember, kind",
    [
        ("global", "global"),
        ("character", "character"),
        ("conversation", "conversation"),
        ("scene", "scene"),
    ],
)
def test_it_creates_an_explicit_user_rule_at_that_scope_when_remembering_d8(
    conversation, context_of, remember, kind
):
    asked = ask_voice(conversation, context_of, scene="greenhouse")
    outcome = services.decision_answer(
        decision_id=asked.decision_id, answer="deny", remember=remember
    )
    rule = outcome.rule.to_domain()
    assert (rule.source, rule.effect, rule.scope.kind, rule.requested_by) == (
        "explicit-user",
        "deny",
        kind,
        "user",
    )
    assert outcome.policy_version.user == 1
    assert ask_voice(conversation, context_of, scene="greenhouse").decision.effect == "deny"


def test_it_refuses_a_scene_answer_without_a_scene_d8(conversation, context_of):
    asked = ask_voice(conversation, context_of)
    with pytest.raises(ValidationError) as caught:
        services.decision_answer(decision_id=asked.decision_id, answer="allow", remember="scene")
    assert "remember" in caught.value.errors


def test_it_lets_only_an_ask_be_answered_d8(wren, conversation, context_of):
    allow_voice(wren)
    allowed = ask_voice(conversation, context_of)
    with pytest.raises(ValidationError) as caught:
        services.decision_answer(decision_id=allowed.decision_id, answer="deny", remember="once")
    assert "decision_id" in caught.value.errors
    with pytest.raises(ValidationError):
        services.decision_answer(
            decision_id="00000000-0000-0000-0000-000000000000", answer="deny", remember="once"
        )


def test_it_replays_the_same_answer_twice_and_refuses_another_as_a_conflict_d8(
    conversation, context_of
):
    asked = ask_voice(conversation, context_of)
    first = services.decision_answer(
        decision_id=asked.decision_id, answer="allow", remember="conversation"
    )
    again = services.decision_answer(
        decision_id=asked.decision_id, answer="allow", remember="conversation"
    )
    assert again.replayed and again.rule.pk == first.rule.pk
    assert PolicyRule.objects.filter(user=conversation.user).count() == 1
    with pytest.raises(Conflict):
        services.decision_answer(
            decision_id=asked.decision_id, answer="deny", remember="conversation"
        )


def test_it_deletes_a_users_policy_data_with_the_user_including_rule_chains(
    wren, conversation, context_of
):
    rule = allow_voice(wren, scope={"kind": "conversation", "conversation": str(conversation.pk)})
    services.rule_change(rule_id=rule.pk, effect="deny")
    job, _ = admit(conversation, context_of)
    asked = services.decision_make(
        context=context_of(conversation, scene="greenhouse"),
        capability="tone.playful",
        requested_by="assistant",
    )
    services.decision_answer(decision_id=asked.decision_id, answer="allow", remember="scene")
    assert job.status == "rejected"
    wren.delete()
    assert not PolicyRule.objects.exists()
    assert not MediaJob.objects.exists()
    assert not DecisionLog.objects.exists()


def test_it_deletes_a_conversations_scoped_rules_and_jobs_with_it(wren, conversation, context_of):
    rule = allow_voice(wren, scope={"kind": "conversation", "conversation": str(conversation.pk)})
    services.rule_change(rule_id=rule.pk, effect="deny")
    kept = allow_voice(wren)
    admit(conversation, context_of)
    conversation.delete()
    assert list(PolicyRule.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not MediaJob.objects.exists()


def test_it_reports_conflicts_and_dead_rules_in_the_static_check_of_a_users_rules(
    wren, conversation, clock
):
    a = allow_voice(wren, scope={"kind": "character", "character": "rowan"})
    b = allow_voice(wren, effect="deny", scope={"kind": "character", "character": "rowan"})
    shadowed = allow_voice(
        wren,
        source="confirmed-inference",
        scope={"kind": "conversation", "conversation": str(conversation.pk)},
    )
    revoked = services.rule_revoke(rule_id=allow_voice(wren, capability="media.image").pk)
    result = selectors.rule_check_of_user(wren, now=clock.now)
    assert [c.rule_ids for c in result.conflicts] == [tuple(sorted([str(a.pk), str(b.pk)]))]
    assert {(d.rule_id, d.reason) for d in result.dead} == {
        (str(shadowed.pk), "shadowed"),
        (str(revoked.pk), "revoked"),
    }
