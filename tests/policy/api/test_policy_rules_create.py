"""`POST /policy/rules` (SPEC §6, §10): a rule with every field, a product default, bad rules
refused naming the field."""

import uuid

import pytest

from tests.helpers import assert_problem
from tests.policy.api.calls import (
    create_rule,
    decide,
)

pytestmark = pytest.mark.django_db


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
