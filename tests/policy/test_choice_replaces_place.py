"""SPEC D11: a choice replaces its place. A place is a capability plus an exact scope (kind and
ids); the user's newest choice there — from the boundaries page, an ASK answered with
`remember` other than `once` (D8), or `POST /policy/rules` with `"replace": true` — revokes
every live `explicit-user` rule of theirs at that place, whatever its `requested_by`, in the same
transaction, so it never ties with an older choice (D4)."""

import pytest
from django.urls import reverse

from policy import services
from policy.models import PolicyRule
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx(conversation, capabilities):
    return {"user": "wren", "character": "rowan", "conversation": str(conversation.pk)}


def decide(api, ctx, capability="media.voice", requested_by="user"):
    return api.post(
        "/api/v1/policy/decide",
        {"context": ctx, "capability": capability, "requested_by": requested_by},
        format="json",
    ).json()


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


def live(user, capability="media.voice"):
    return list(
        PolicyRule.objects.filter(
            user=user, capability_id=capability, revoked_at__isnull=True
        ).order_by("created_at", "id")
    )


def test_it_revokes_every_choice_at_the_place_on_replace_whatever_the_requester_d11(api, ctx, wren):
    """D11: `replace: true` revokes the user's live explicit choices at the same capability and
    scope — also one limited to another requester — and the next decision there is the new
    rule's effect, reason `explicit-rule`."""
    first = create_rule(api, effect="allow").json()
    second = create_rule(api, effect="allow", requested_by="assistant").json()
    response = create_rule(api, effect="deny", replace=True)
    assert response.status_code == 201
    new = response.json()
    assert [str(r.pk) for r in live(wren)] == [new["id"]]
    revoked = {
        str(r.pk): r.revoked_at
        for r in PolicyRule.objects.filter(pk__in=[first["id"], second["id"]])
    }
    assert all(at is not None for at in revoked.values())
    assert len(set(revoked.values())) == 1  # one transaction, one clock reading
    body = decide(api, ctx)
    assert (body["effect"], body["reason"], body["rule_ids"]) == (
        "deny",
        "explicit-rule",
        [new["id"]],
    )
    assert body["policy_version"]["user"] == 3  # two creations, then one bump for the replacement


def test_it_leaves_other_places_defaults_and_inferred_rules_alone_on_replace_d11(
    api, ctx, wren, conversation
):
    """D11: rules at other places (another scope or capability), product defaults and
    `confirmed-inference` rules are untouched."""
    elsewhere = create_rule(
        api, scope={"kind": "conversation", "conversation": str(conversation.pk)}
    ).json()
    other_capability = create_rule(api, capability="media.image").json()
    inferred = create_rule(api, source="confirmed-inference").json()
    default = api.post(
        "/api/v1/policy/rules",
        {
            "capability": "media.voice",
            "effect": "allow",
            "source": "product-default",
            "scope": {"kind": "global"},
        },
        format="json",
    ).json()
    create_rule(api, effect="deny", replace=True)
    untouched = PolicyRule.objects.filter(
        pk__in=[elsewhere["id"], other_capability["id"], inferred["id"], default["id"]]
    )
    assert [r.revoked_at for r in untouched] == [None] * 4


def test_it_adds_a_rule_without_replace_so_the_two_tie_d11(api, ctx, wren):
    """D11: without `replace` a rule is added (201) beside the older one; D4 then asks."""
    a = create_rule(api, effect="allow").json()
    response = create_rule(api, effect="deny")
    assert response.status_code == 201
    assert len(live(wren)) == 2
    body = decide(api, ctx)
    assert (body["effect"], body["reason"]) == ("ask", "conflicting-rules")
    assert a["id"] in body["rule_ids"]


def test_it_documents_replace_in_the_schema_d11():
    """D11: `replace` is documented on `POST /policy/rules` (C1)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    create = schema["paths"]["/api/v1/policy/rules"]["post"]
    ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    field = schema["components"]["schemas"][ref]["properties"]["replace"]
    assert field["type"] == "boolean" and field["default"] is False
    assert "D11" in field["description"]


def test_it_replaces_the_tied_choices_with_a_remembered_ask_answer_d11_d4(api, ctx, wren):
    """D11 with D4's tie: two choices of the user at one place disagree, so the decision asks
    (`conflicting-rules`); answering with `remember: global` revokes both and the next decision
    is the answer, reason `explicit-rule` — without D11 the three would still tie."""
    create_rule(api, effect="allow")
    create_rule(api, effect="deny")
    asked = decide(api, ctx)
    assert (asked["effect"], asked["reason"]) == ("ask", "conflicting-rules")
    answered = api.post(
        "/api/v1/policy/answers",
        {"decision_id": asked["decision_id"], "answer": "deny", "remember": "global"},
        format="json",
    ).json()
    rule_id = answered["rule"]["id"]
    assert [str(r.pk) for r in live(wren)] == [rule_id]
    body = decide(api, ctx)
    assert (body["effect"], body["reason"], body["rule_ids"]) == (
        "deny",
        "explicit-rule",
        [rule_id],
    )


def test_it_replaces_only_that_place_with_an_ask_answer_for_the_conversation_d11(
    api, ctx, wren, conversation
):
    """D11 with D8: an answer remembered for a conversation replaces the user's choices for
    that conversation, whatever their requester, and not the global one."""
    place = {"kind": "conversation", "conversation": str(conversation.pk)}
    older = create_rule(api, effect="allow", scope=place, requested_by="assistant").json()
    asked = decide(api, ctx, requested_by="user")
    assert asked["reason"] == "no-applicable-rule"
    answered = api.post(
        "/api/v1/policy/answers",
        {"decision_id": asked["decision_id"], "answer": "deny", "remember": "conversation"},
        format="json",
    ).json()
    assert PolicyRule.objects.get(pk=older["id"]).revoked_at is not None
    assert decide(api, ctx, requested_by="user")["rule_ids"] == [answered["rule"]["id"]]
    other = ConversationFactory(user=wren, character=conversation.character)
    assert decide(api, {**ctx, "conversation": str(other.pk)})["reason"] == "no-applicable-rule"


def test_it_creates_and_revokes_nothing_for_an_answer_once_d11(api, ctx, wren):
    """D8/D11: `once` applies to the decision only: no rule, nothing revoked."""
    create_rule(api, effect="allow", requested_by="assistant")
    asked = decide(api, ctx, requested_by="user")
    api.post(
        "/api/v1/policy/answers",
        {"decision_id": asked["decision_id"], "answer": "deny", "remember": "once"},
        format="json",
    )
    assert len(live(wren)) == 1


def test_it_replaces_every_choice_at_its_place_with_a_boundaries_choice_d11(ctx, wren):
    """D11 on the boundaries page's service: a choice revokes the user's older ones at the
    place — also those limited to one requester — and the decision there is the choice."""
    services.rule_create(
        user=wren,
        capability="media.voice",
        effect="allow",
        source="explicit-user",
        scope={"kind": "global"},
        requested_by="assistant",
    )
    services.rule_create(
        user=wren,
        capability="media.voice",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    assert (
        services.boundary_set(
            user=wren, capability="media.voice", effect="ask", scope={"kind": "global"}
        )
        == "changed"
    )
    [rule] = live(wren)
    assert (rule.effect, rule.requested_by, rule.scope_kind) == ("ask", None, "global")
    assert (
        services.boundary_set(
            user=wren, capability="media.voice", effect="ask", scope={"kind": "global"}
        )
        == "unchanged"
    )
    assert live(wren) == [rule]


def test_it_saves_a_choice_on_the_boundaries_page_that_wins_at_once_d11(client, ctx, wren, api):
    """D11 through the page: the older choice for another requester is revoked, and the API's
    decision at that place is the page's choice, reason `explicit-rule`."""
    create_rule(api, effect="allow", requested_by="user")
    client.force_login(wren)
    response = client.post(
        reverse("policy:set"), {"capability": "media.voice", "effect": "deny", "where": "global"}
    )
    assert response.status_code == 302, response.content[:400]  # POST-redirect-GET
    [rule] = live(wren)
    assert rule.effect == "deny"
    body = decide(api, ctx, requested_by="user")
    assert (body["effect"], body["reason"], body["rule_ids"]) == (
        "deny",
        "explicit-rule",
        [str(rule.pk)],
    )
