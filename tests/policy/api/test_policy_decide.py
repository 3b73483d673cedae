"""The policy endpoints of SPEC §10: paths, status codes, JSON shapes and problem details."""

import uuid

import pytest
from django.db import models

from policy.models import DecisionLog, PolicyRule
from tests.factories import ConversationFactory, UserFactory, at
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"
DECISION_FIELDS = {"decision_id", "effect", "reason", "rule_ids", "policy_version"}
RULE_FIELDS = {
    "id",
    "user",
    "capability",
    "effect",
    "source",
    "scope",
    "requested_by",
    "valid_from",
    "valid_until",
    "revoked_at",
    "version",
}
JOB_FIELDS = {"id", "status", "capability", "decision", "policy_version_at_admission"}


@pytest.fixture
def ctx(conversation, capabilities):
    return {"user": "wren", "character": "rowan", "conversation": str(conversation.pk)}


def decide(api, ctx, capability="media.voice", requested_by="user", **extra):
    return api.post(
        "/api/v1/policy/decide",
        {"context": ctx, "capability": capability, "requested_by": requested_by, **extra},
        format="json",
    )


def create_rule(api, **body):
    values = {
        "user": "wren",
        "capability": "media.voice",
        "effect": "allow",
        "source": "explicit-user",
        "scope": {"kind": "global"},
    }
    values.update(body)
    return api.post("/api/v1/policy/rules", values, format="json")


def admit(api, ctx, key="job-1", capability="media.voice"):
    return api.post(
        "/api/v1/media-jobs",
        {"context": ctx, "capability": capability, "requested_by": "user", "idempotency_key": key},
        format="json",
    )


# ---------------------------------------------------------------------------------------------
# The contract smoke test's policy calls, exactly


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


# ---------------------------------------------------------------------------------------------
# Capabilities


def test_it_lists_the_five_seeded_capabilities_with_their_questions(api, capabilities):
    body = api.get("/api/v1/policy/capabilities").json()
    assert body["count"] == 5
    names = [item["name"] for item in body["results"]]
    assert names == sorted(
        ["tone.playful", "topic.work", "relationship.advance", "media.voice", "media.image"]
    )
    assert all(item["question"] for item in body["results"])


def test_it_refuses_a_request_without_a_token(client, capabilities):
    assert_problem(client.get("/api/v1/policy/capabilities"), 401, "unauthenticated")


# ---------------------------------------------------------------------------------------------
# Decide


def test_d2_decide_with_no_rule_asks_the_capabilitys_question(api, ctx):
    body = decide(api, ctx).json()
    assert set(body) == DECISION_FIELDS | {"question"}
    assert body["question"] == "May I send you voice messages?"
    assert body["rule_ids"] == []
    assert body["policy_version"] == {"defaults": 0, "user": 0}
    uuid.UUID(body["decision_id"])


def test_d4_decide_names_the_deciding_rule_and_leaves_out_the_question(api, ctx):
    rule = create_rule(api, effect="deny").json()
    body = decide(api, ctx).json()
    assert set(body) == DECISION_FIELDS
    assert (body["effect"], body["reason"], body["rule_ids"]) == (
        "deny",
        "explicit-rule",
        [rule["id"]],
    )
    assert body["policy_version"] == {"defaults": 0, "user": 1}


def test_d4_decide_asks_about_conflicting_rules_listing_both(api, ctx):
    ids = sorted(
        [
            create_rule(api, effect="deny").json()["id"],
            create_rule(api, effect="allow").json()["id"],
        ]
    )
    body = decide(api, ctx).json()
    assert (body["effect"], body["reason"], body["rule_ids"]) == ("ask", "conflicting-rules", ids)


def test_decide_explains_every_rule_when_asked(api, ctx, marlowe):
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
def test_decide_refuses_bad_input_naming_the_field(api, ctx, change, field):
    body = {"context": ctx, "capability": "media.voice", "requested_by": "user", **change}
    assert_problem(
        api.post("/api/v1/policy/decide", body, format="json"), 400, "validation_error", field
    )


def test_decide_never_answers_500_for_a_body_that_is_not_an_object(api, capabilities):
    for body in ([], "x", 3, None):
        response = api.post("/api/v1/policy/decide", body, format="json")
        assert response.status_code == 400


def test_decide_runs_a_constant_number_of_queries_whatever_the_number_of_rules(
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


# ---------------------------------------------------------------------------------------------
# Rules


def test_it_creates_a_rule_with_every_field(api, ctx, conversation):
    response = create_rule(
        api,
        scope={"kind": "scene", "conversation": str(conversation.pk), "scene": "greenhouse"},
        requested_by="assistant",
        valid_from="2026-08-05T12:00:00Z",
        valid_until="2026-08-06T12:00:00.250000Z",
        effect="ask",
    )
    assert response.status_code == 201
    rule = response.json()
    assert rule["user"] == "wren"
    assert rule["scope"] == {
        "kind": "scene",
        "conversation": str(conversation.pk),
        "scene": "greenhouse",
    }
    assert (rule["valid_from"], rule["valid_until"]) == (
        "2026-08-05T12:00:00Z",
        "2026-08-06T12:00:00.250000Z",
    )
    assert (rule["revoked_at"], rule["version"], rule["requested_by"]) == (None, 1, "assistant")


def test_it_creates_a_product_default_without_a_user(api, ctx, rowan):
    response = create_rule(
        api, user=None, source="product-default", scope={"kind": "character", "character": "rowan"}
    )
    assert response.status_code == 201
    assert response.json()["user"] is None
    assert decide(api, ctx).json()["policy_version"] == {"defaults": 1, "user": 0}


@pytest.mark.parametrize(
    "change, field",
    [
        ({"user": "nobody"}, "user"),
        ({"capability": "media.smell"}, "capability"),
        ({"effect": "perhaps"}, "effect"),
        ({"scope": {"kind": "user"}}, "scope.kind"),
        ({"scope": {"kind": "character"}}, "scope.character"),
        ({"scope": {"kind": "global", "character": "rowan"}}, "scope.character"),
        (
            {"scope": {"kind": "conversation", "conversation": str(uuid.uuid4())}},
            "scope.conversation",
        ),
        (
            {
                "user": None,
                "source": "product-default",
                "scope": {"kind": "conversation", "conversation": str(uuid.uuid4())},
            },
            "scope.kind",
        ),
        ({"user": None}, "source"),
        ({"source": "product-default"}, "source"),
        (
            {"valid_from": "2026-08-05T12:00:00Z", "valid_until": "2026-08-05T11:00:00Z"},
            "valid_until",
        ),
        ({"version": 3}, "version"),
        ({"id": str(uuid.uuid4())}, "id"),
    ],
)
def test_it_refuses_a_bad_rule_naming_the_field(api, ctx, change, field):
    assert_problem(create_rule(api, **change), 400, "validation_error", field)


def test_it_lists_a_users_rules_or_the_product_defaults(api, ctx):
    mine = create_rule(api).json()
    create_rule(api, user=None, source="product-default", effect="deny")
    create_rule(api, user=UserFactory(username="ash").username)
    body = api.get("/api/v1/policy/rules?user=wren").json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert [r["id"] for r in body["results"]] == [mine["id"]]
    defaults = api.get("/api/v1/policy/rules").json()["results"]
    assert [(r["user"], r["effect"]) for r in defaults] == [(None, "deny")]
    assert api.get("/api/v1/policy/rules?user=wren&capability=tone.playful").json()["count"] == 0
    assert_problem(api.get("/api/v1/policy/rules?user=nobody"), 400, "validation_error", "user")
    assert_problem(
        api.get("/api/v1/policy/rules?capability=x"), 400, "validation_error", "capability"
    )


def test_the_rule_list_runs_a_constant_number_of_queries(api, ctx, django_assert_num_queries):
    create_rule(api)
    with django_assert_num_queries(4):  # token, user, count, page
        api.get("/api/v1/policy/rules?user=wren")
    for _ in range(5):
        create_rule(api)
    with django_assert_num_queries(4):
        assert api.get("/api/v1/policy/rules?user=wren").json()["count"] == 6


def test_d5_revoking_a_rule_returns_it_with_revoked_at_and_d7_bumps_the_version(api, ctx):
    rule = create_rule(api).json()
    response = api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {}, format="json")
    assert response.status_code == 200
    revoked = response.json()
    assert revoked["revoked_at"] is not None and revoked["revoked_at"].endswith("Z")
    body = decide(api, ctx).json()
    assert (body["effect"], body["reason"], body["policy_version"]["user"]) == (
        "ask",
        "no-applicable-rule",
        2,
    )
    again = api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {}, format="json")
    assert again.status_code == 200 and again.json()["revoked_at"] == revoked["revoked_at"]


def test_revoking_an_unknown_rule_is_404(api, capabilities):
    assert_problem(
        api.post(f"/api/v1/policy/rules/{uuid.uuid4()}/revoke", {}, format="json"), 404, "not_found"
    )
    assert_problem(
        api.post("/api/v1/policy/rules/not-a-uuid/revoke", {}, format="json"), 404, "not_found"
    )


def test_revoke_refuses_unknown_fields(api, ctx):
    rule = create_rule(api).json()
    assert_problem(
        api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {"at": "now"}, format="json"),
        400,
        "validation_error",
        "at",
    )


# ---------------------------------------------------------------------------------------------
# Answers (D8)


def answer(api, decision_id, answer="allow", remember="once", **extra):
    return api.post(
        "/api/v1/policy/answers",
        {"decision_id": decision_id, "answer": answer, "remember": remember, **extra},
        format="json",
    )


def test_d8_an_answer_remembered_for_the_conversation_creates_a_rule(api, ctx, conversation):
    asked = decide(api, ctx).json()
    response = answer(api, asked["decision_id"], remember="conversation")
    assert response.status_code == 200
    body = response.json()
    assert (body["effect"], body["replayed"], body["media_job"]) == ("allow", False, None)
    assert body["rule"]["scope"] == {"kind": "conversation", "conversation": str(conversation.pk)}
    assert body["rule"]["source"] == "explicit-user"
    assert body["policy_version"] == {"defaults": 0, "user": 1}
    assert decide(api, ctx).json()["effect"] == "allow"
    other = ConversationFactory(user=conversation.user, character=conversation.character)
    assert decide(api, {**ctx, "conversation": str(other.pk)}).json()["effect"] == "ask"


def test_d8_a_scene_answer_without_a_scene_is_400(api, ctx):
    asked = decide(api, ctx).json()
    assert_problem(
        answer(api, asked["decision_id"], remember="scene"), 400, "validation_error", "remember"
    )


def test_d8_a_replayed_answer_is_200_and_a_different_one_409(api, ctx):
    asked = decide(api, ctx).json()
    answer(api, asked["decision_id"], remember="global")
    again = answer(api, asked["decision_id"], remember="global")
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert_problem(
        answer(api, asked["decision_id"], answer="deny", remember="global"), 409, "conflict"
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ({"decision_id": str(uuid.uuid4()), "answer": "allow", "remember": "once"}, "decision_id"),
        ({"decision_id": "nope", "answer": "allow", "remember": "once"}, "decision_id"),
        ({"decision_id": str(uuid.uuid4()), "answer": "ask", "remember": "once"}, "answer"),
        ({"decision_id": str(uuid.uuid4()), "answer": "allow", "remember": "forever"}, "remember"),
        ({"answer": "allow", "remember": "once"}, "decision_id"),
    ],
)
def test_d8_bad_answers_name_the_field(api, capabilities, body, field):
    assert_problem(
        api.post("/api/v1/policy/answers", body, format="json"), 400, "validation_error", field
    )


# ---------------------------------------------------------------------------------------------
# Media jobs (D9)


def test_d9_a_job_carries_its_decision_and_versions(api, ctx):
    response = admit(api, ctx)
    assert response.status_code == 201
    job = response.json()
    assert set(job) == JOB_FIELDS | {"reason"}
    assert job["status"] == "needs-confirmation" and job["reason"] == "ask:no-applicable-rule"
    assert set(job["decision"]) == DECISION_FIELDS | {"question"}
    assert job["policy_version_at_admission"] == {"defaults": 0, "user": 0}


def test_d8_d9_answering_a_jobs_ask_once_lets_it_run(api, ctx):
    job = admit(api, ctx).json()
    body = answer(api, job["decision"]["decision_id"], media_job=job["id"]).json()
    assert body["media_job"]["status"] == "queued"
    started = api.post(f"/api/v1/media-jobs/{job['id']}/start", {}, format="json").json()
    assert started["status"] == "running"
    assert started["policy_version_at_start"] == {"defaults": 0, "user": 0}
    done = api.post(f"/api/v1/media-jobs/{job['id']}/complete", {}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "done"
    assert (
        api.post(f"/api/v1/media-jobs/{job['id']}/complete", {}, format="json").json()["status"]
        == "done"
    )


def test_d9_a_stale_job_is_cancelled_at_start_with_both_versions(api, ctx):
    rule = create_rule(api).json()
    job = admit(api, ctx).json()
    assert (
        job["status"] == "queued" and "reason" not in job and "policy_version_at_start" not in job
    )
    api.post(f"/api/v1/policy/rules/{rule['id']}/revoke", {}, format="json")
    started = api.post(f"/api/v1/media-jobs/{job['id']}/start", {}, format="json")
    assert started.status_code == 200
    body = started.json()
    assert (body["status"], body["reason"]) == ("cancelled", "ask:no-applicable-rule")
    assert (body["policy_version_at_admission"], body["policy_version_at_start"]) == (
        {"defaults": 0, "user": 1},
        {"defaults": 0, "user": 2},
    )
    assert_problem(
        api.post(f"/api/v1/media-jobs/{job['id']}/complete", {}, format="json"), 409, "conflict"
    )


def test_d9_the_same_key_answers_200_with_the_job_and_another_request_409(api, ctx):
    first = admit(api, ctx)
    again = admit(api, ctx)
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
    assert_problem(admit(api, ctx, capability="media.image"), 409, "idempotency_key_reused")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"capability": "media.smell"}, "capability"),
        ({"capability": "tone.playful"}, "capability"),
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"idempotency_key": "x" * 256}, "idempotency_key"),
        ({"requested_by": "robot"}, "requested_by"),
    ],
)
def test_d9_bad_jobs_name_the_field(api, ctx, change, field):
    body = {
        "context": ctx,
        "capability": "media.voice",
        "requested_by": "user",
        "idempotency_key": "k",
        **change,
    }
    assert_problem(
        api.post("/api/v1/media-jobs", body, format="json"), 400, "validation_error", field
    )


def test_d9_unknown_jobs_are_404(api, capabilities):
    for action in ("start", "complete"):
        assert_problem(
            api.post(f"/api/v1/media-jobs/{uuid.uuid4()}/{action}", {}, format="json"),
            404,
            "not_found",
        )
        assert_problem(
            api.post(f"/api/v1/media-jobs/nope/{action}", {}, format="json"), 404, "not_found"
        )


# ---------------------------------------------------------------------------------------------
# D10: the decision log holds its allow-list and nothing else


def test_d10_the_decision_log_has_exactly_the_allow_listed_fields_and_no_text():
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


def test_d10_a_decision_logs_ids_and_codes_not_text(api, ctx, conversation):
    decide(api, {**ctx, "scene": "greenhouse"}, requested_by="assistant")
    row = DecisionLog.objects.get()
    values = [
        getattr(row, name) if name != "user" else row.user_id for name in DecisionLog.ALLOWED_FIELDS
    ]
    assert "voice messages" not in repr(values)  # not even the capability's question
    assert row.scope_ids[-1] == f"scene:{conversation.pk}:greenhouse"
