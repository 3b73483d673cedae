"""Readable builders for the pure engine's tests (no database)."""

import datetime as dt

from policy.domain import DecisionRequest, PolicyContext, PolicyScope, Rule

T0 = dt.datetime(2026, 8, 5, 12, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)

CONV = "11111111-1111-4111-8111-111111111111"
OTHER_CONV = "22222222-2222-4222-8222-222222222222"

GLOBAL = PolicyScope("global")
ROWAN = PolicyScope("character", character="rowan")
MARLOWE = PolicyScope("character", character="marlowe")
CONVERSATION = PolicyScope("conversation", conversation=CONV)
GREENHOUSE = PolicyScope("scene", conversation=CONV, scene="greenhouse")
DOWNSTAIRS = PolicyScope("scene", conversation=CONV, scene="downstairs")

VOICE = DecisionRequest("media.voice", "user")
IMAGE = DecisionRequest("media.image", "assistant")
PLAYFUL = DecisionRequest("tone.playful", "assistant")
WORK = DecisionRequest("topic.work", "user")


def context(**changes) -> PolicyContext:
    values = {
        "user": "wren",
        "now": T0,
        "character": "rowan",
        "conversation": CONV,
        "scene": "greenhouse",
    }
    values.update(changes)
    return PolicyContext(**values)


def rule(
    rule_id: str,
    effect: str = "allow",
    *,
    capability: str = "media.voice",
    source: str = "explicit-user",
    scope: PolicyScope = GLOBAL,
    user: str | None = "wren",
    requested_by: str | None = None,
    valid_from: dt.datetime = T0 - DAY,
    valid_until: dt.datetime | None = None,
    revoked_at: dt.datetime | None = None,
    version: int = 1,
) -> Rule:
    if source == "product-default":
        user = None
    return Rule(
        id=rule_id,
        user=user,
        capability=capability,
        effect=effect,
        source=source,
        scope=scope,
        requested_by=requested_by,
        valid_from=valid_from,
        valid_until=valid_until,
        revoked_at=revoked_at,
        version=version,
    )
