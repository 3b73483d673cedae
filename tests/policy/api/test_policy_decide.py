"""`POST /policy/decide` (SPEC §6 D2–D4, D10, §10): the effect, its reason and rules, bad input
refused, a constant number of queries, a decision log of ids and codes only; and the contract
smoke test's policy calls, exactly. The other policy operations have a file each beside it."""

import uuid

import pytest
from django.db import models

from policy.models import DecisionLog, PolicyRule
from tests.factories import at
from tests.helpers import assert_problem
from tests.policy.api.calls import (
    DECISION_FIELDS,
    RULE_FIELDS,
    admit,
    create_rule,
    decide,
)

pytestmark = pytest.mark.django_db


def test_it_passes_the_contract_smoke_policy_calls(api, ctx):
    response = api.get("/api/v1/policy/capabilities")
    assert response.status_code == 200 and "media.voice" in response.content.decode()

    response = decide(api, ctx)
    body = response.json()
    assert response.status_code == 200
    assert (body["effect"], body["reason"]) == ("ask", "no-applicable-rule")
    assert set(body["policy_version"]) == {"defaults", "user"}

    response = create_rule(api)
    rule = response.json()
    assert response.status_code == 201 and set(rule) == RULE_FIELDS

    response = admit(api, ctx, key="smoke-1")
    job = response.json()
    assert response.status_code == 201 and job["status"] == "queued"

    response = api.post(f"/api/v1/media-jobs/{job['id']}/start", {}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "running"

    response = api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {}, format="json")
    assert response.status_code == 200


def test_it_decides_with_no_rule_by_asking_the_capabilitys_question_d2(api, ctx):
    body = decide(api, ctx).json()
    assert set(body) == DECISION_FIELDS | {"question"}
    assert body["question"] == "May I send you voice messages?"
    assert body["rule_ids"] == []
    assert body["policy_version"] == {"defaults": 0, "user": 0}
    uuid.UUID(body["decision_id"])


def test_it_decides_naming_the_deciding_rule_and_leaving_out_the_question_d4(api, ctx):
    rule = create_rule(api, effect="deny").json()
    body = decide(api, ctx).json()
    assert set(body) == DECISION_FIELDS
    assert (body["effect"], body["reason"], body["rule_ids"]) == (
        "deny",
        "explicit-rule",
        [rule["id"]],
    )
    assert body["policy_version"] == {"defaults": 0, "user": 1}


def test_it_decides_to_ask_about_conflicting_rules_listing_both_d4(api, ctx):
    ids = sorted(
        [
            create_rule(api, effect="deny").json()["id"],
            create_rule(api, effect="allow").json()["id"],
        ]
    )
    body = decide(api, ctx).json()
    assert (body["effect"], body["reason"], body["rule_ids"]) == ("ask", "conflicting-rules", ids)


def test_it_explains_every_rule_of_a_decision_when_asked(api, ctx, marlowe):
    other = create_rule(api, scope={"kind": "character", "character": "marlowe"}).json()
    body = decide(api, ctx, explain=True).json()
    assert body["explain"] == [
        {
            "rule_id": other["id"],
            "reason": "scope",
            "detail": "character marlowe does not cover this context",
        }
    ]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"capability": "media.smell"}, "capability"),
        ({"capability": ""}, "capability"),
        ({"requested_by": "robot"}, "requested_by"),
        ({"requested_by": None}, "requested_by"),
        ({"surprise": 1}, "surprise"),
        ({"context": {"user": "nobody"}}, "context.user"),
        ({"context": {"user": "wren", "conversation": "not-a-uuid"}}, "context.conversation"),
        ({"context": {"user": "wren", "scene": "greenhouse"}}, "context.scene"),
    ],
)
def test_it_refuses_a_decide_with_bad_input_naming_the_field(api, ctx, change, field):
    body = {"context": ctx, "capability": "media.voice", "requested_by": "user", **change}
    assert_problem(
        api.post("/api/v1/policy/decide", body, format="json"), 400, "validation_error", field
    )


def test_it_never_answers_500_to_a_decide_body_that_is_not_an_object(api, capabilities):
    for body in ([], "x", 3, None):
        response = api.post("/api/v1/policy/decide", body, format="json")
        assert response.status_code == 400


def test_it_decides_in_a_constant_number_of_queries_whatever_the_number_of_rules(
    api, ctx, wren, conversation, django_assert_num_queries
):
    body = {
        "context": {**ctx, "now": "2026-12-01T00:00:00Z"},
        "capability": "media.voice",
        "requested_by": "user",
    }

    def add_rules(count):
        PolicyRule.objects.bulk_create(
            [
                PolicyRule(
                    user=wren,
                    capability_id="media.voice",
                    effect="allow",
                    source="explicit-user",
                    scope_kind="conversation",
                    conversation=conversation,
                    valid_from=at("2026-08-01T00:00"),
                    created_at=at("2026-08-01T00:00"),
                )
                for _ in range(count)
            ]
        )

    # A cold process first loads the catalog (config.catalog): the capabilities, then the
    # product defaults with their version. Token (with the catalog version), the conversation
    # with its user and character, capabilities, savepoint, defaults' version, defaults, the
    # user's version, the user's rules, log insert, release.
    with django_assert_num_queries(10):
        assert api.post("/api/v1/policy/decide", body, format="json").json()["effect"] == "ask"
    # Warm: the capability and the defaults come from the cache; a user's rules are not
    # catalog data, so adding them keeps it warm.
    add_rules(1)
    with django_assert_num_queries(7):
        assert api.post("/api/v1/policy/decide", body, format="json").json()["effect"] == "allow"
    add_rules(49)
    with django_assert_num_queries(7):
        assert len(api.post("/api/v1/policy/decide", body, format="json").json()["rule_ids"]) == 50


def test_it_logs_decisions_with_exactly_the_allow_listed_fields_and_no_text_d10():
    allowed = {
        "id",  # decision id
        "user",
        "capability",
        "requested_by",
        "effect",
        "reason",
        "rule_ids",  # rule ids (a JSON list of UUIDs)
        "defaults_version",
        "user_version",  # the policy version
        "scope_ids",  # the context's scope ids (SPEC §1)
        "decided_at",  # time
        "requester",  # who asked: `connection:<id>` for an MCP connection (§15 M3), an id
    }
    fields = {field.name: field for field in DecisionLog._meta.get_fields() if field.concrete}
    assert set(fields) == allowed == set(DecisionLog.ALLOWED_FIELDS)
    assert not [name for name, field in fields.items() if isinstance(field, models.TextField)]
    # The few strings are codes: bounded, short, and never free text.
    strings = {
        name: field.max_length
        for name, field in fields.items()
        if isinstance(field, models.CharField)
    }
    assert strings and all(length <= 100 for length in strings.values())


def test_it_logs_a_decisions_ids_and_codes_not_text_d10(api, ctx, conversation):
    decide(api, {**ctx, "scene": "greenhouse"}, requested_by="assistant")
    row = DecisionLog.objects.get()
    values = [
        getattr(row, name) if name != "user" else row.user_id for name in DecisionLog.ALLOWED_FIELDS
    ]
    assert "voice messages" not in repr(values)  # not even the capability's question
    assert row.scope_ids[-1] == f"scene:{conversation.pk}:greenhouse"
