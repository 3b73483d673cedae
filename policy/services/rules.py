"""Rules (SPEC §6): create, revoke and change a rule, each with D7's version bump and V1's
`policy.changed` event in its transaction, and the boundaries page's choice (D11: a choice
replaces the user's live choices at its place).

Lock order, everywhere: a policy-version row, then a rule row; a media-job row alone. Keeping
one order means two concurrent changes wait for each other instead of deadlocking."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Q

from config.clock import db_now
from config.errors import Conflict, NotFound, ValidationError
from conversations.selectors import character_by_slug, conversation_of_user
from events import outbox

from ..domain import (
    DEFAULT_SCOPE_KINDS,
    EFFECTS,
    EXPLICIT_USER,
    PRODUCT_DEFAULT,
    REQUESTERS,
    SCOPE_KINDS,
    SOURCES,
)
from ..models import Capability, DefaultsPolicyVersion, PolicyRule, UserPolicyVersion
from ..selectors import as_uuid, capability_by_name, rule_list

if TYPE_CHECKING:
    from django.contrib.auth.models import User
from .decisions import require_choice

KEEP: Any = object()  # rule_change: "leave this field as it was"


def _lock_policy_version(user) -> UserPolicyVersion | DefaultsPolicyVersion:
    """D7: the row that a user's (or, for `None`, the product defaults') version lives in,
    locked for the rest of the transaction: concurrent changes for one user queue here."""
    if user is None:
        model, lookup = DefaultsPolicyVersion, {"pk": 1}
    else:
        model, lookup = UserPolicyVersion, {"user": user}
    row = model.objects.select_for_update().filter(**lookup).first()
    if row is None:
        # The first change: create the row (get_or_create re-reads it if a concurrent
        # transaction created it first), then lock it like any other.
        model.objects.get_or_create(**lookup)
        row = model.objects.select_for_update().get(**lookup)
    return row


def _bump(row: UserPolicyVersion | DefaultsPolicyVersion, *, user, rules, at) -> int:
    """D7: strictly increasing, in the transaction of the change it counts. Returns the new
    version, which the services leave on the rule as `policy_version_after`. V1: the change's
    `policy.changed` event (the version and the rules it touched) in the same transaction."""
    row.version += 1
    row.save(update_fields=["version"])
    outbox.record(
        [
            outbox.policy_changed(
                user.username if user is not None else None,
                policy_version=row.version,
                rules=rules,
                at=at,
            )
        ]
    )
    return row.version


# ---------------------------------------------------------------------------------------------
# Rules


def _scope_rows(*, user, scope: Mapping) -> dict:
    """A scope dict ({"kind", "character"?, "conversation"?, "scene"?}) → the rule's columns,
    checked: the character exists, the conversation belongs to the rule's user, a product
    default is global or per character."""
    kind = scope.get("kind")
    require_choice(kind, SCOPE_KINDS, field="scope.kind")
    if user is None and kind not in DEFAULT_SCOPE_KINDS:
        raise ValidationError(
            "A product default has a global or character scope.", field="scope.kind"
        )
    needed = {
        "global": set(),
        "character": {"character"},
        "conversation": {"conversation"},
        "scene": {"conversation", "scene"},
    }[kind]
    for name in ("character", "conversation", "scene"):
        if name in needed and not scope.get(name):
            raise ValidationError(f"Required for a {kind} scope.", field=f"scope.{name}")
        if name not in needed and scope.get(name) is not None:
            raise ValidationError(f"Not allowed for a {kind} scope.", field=f"scope.{name}")
    rows: dict = {"scope_kind": kind, "character": None, "conversation": None, "scene": None}
    if kind == "character":
        rows["character"] = character_by_slug(scope["character"], field="scope.character")
    if kind in ("conversation", "scene"):
        rows["conversation"] = conversation_of_user(
            user, scope["conversation"], field="scope.conversation"
        )
    if kind == "scene":
        scene = scope["scene"]
        if not isinstance(scene, str) or len(scene) > 100 or "\x00" in scene:
            raise ValidationError("A scene id of 1–100 characters.", field="scope.scene")
        rows["scene"] = scene
    return rows


def _insert_rule(
    *,
    user,
    capability: Capability,
    effect: str,
    source: str,
    scope_rows: dict,
    requested_by: str | None,
    valid_from: datetime,
    valid_until: datetime | None,
    now: datetime,
    version: int = 1,
    supersedes: PolicyRule | None = None,
) -> PolicyRule:
    if valid_until is not None and valid_until <= valid_from:
        raise ValidationError("Must be later than valid_from.", field="valid_until")
    return PolicyRule.objects.create(
        user=user,
        capability=capability,
        effect=effect,
        source=source,
        requested_by=requested_by,
        valid_from=valid_from,
        valid_until=valid_until,
        version=version,
        supersedes=supersedes,
        created_at=now,
        **scope_rows,
    )


def rule_create(
    *,
    user: User | None,
    capability: str,
    effect: str,
    source: str,
    scope: Mapping,
    requested_by: str | None = None,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    replace: bool = False,
) -> PolicyRule:
    """A new rule, version 1 (SPEC §6), and D7's version bump in the same transaction. `user`
    None makes a product default: global or character scope, source `product-default` (and
    only a product default has that source). `valid_from` defaults to the database clock.

    D11 with `replace`: the user's choice replaces its place — every live `explicit-user` rule
    of `user` at the same capability and exact scope (kind and ids), whatever its
    `requested_by`, is revoked in the same transaction (`place_replace`). Without it a rule is
    added beside them."""
    with transaction.atomic():
        return rule_create_at(
            now=None,
            user=user,
            capability=capability,
            effect=effect,
            source=source,
            scope=scope,
            requested_by=requested_by,
            valid_from=valid_from,
            valid_until=valid_until,
            replace=replace,
        )


def _live_at_place(*, user, capability: str, scope_rows: dict, now: datetime):
    """D11: the live (not revoked, not expired) `explicit-user` rules of `user` at one place —
    a capability and an exact scope, whatever their `requested_by` — locked."""
    return list(
        PolicyRule.objects.select_for_update()
        .filter(
            user=user,
            capability_id=capability,
            source=EXPLICIT_USER,
            scope_kind=scope_rows["scope_kind"],
            character=scope_rows["character"],
            conversation=scope_rows["conversation"],
            scene=scope_rows["scene"],
        )
        .filter(Q(revoked_at__isnull=True) | Q(revoked_at__gt=now))
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gt=now))
        .order_by("created_at", "id")
    )


def rule_create_at(
    *,
    now: datetime | None,
    user,
    capability: str,
    effect: str,
    source: str,
    scope: Mapping,
    requested_by: str | None,
    valid_from: datetime | None,
    valid_until: datetime | None,
    replace: bool = False,
) -> PolicyRule:
    """rule_create inside the caller's transaction, at the caller's clock reading if it has one
    (SPEC §0: one reading per transaction). With `replace` (D11), the user's live explicit
    choices at the place are revoked at that reading, and the new rule succeeds the newest of
    them (its version + 1); one version bump for it all (D7)."""
    require_choice(effect, EFFECTS, field="effect")
    require_choice(source, SOURCES, field="source")
    require_choice(requested_by, REQUESTERS, field="requested_by", allow_none=True)
    if user is None and source != PRODUCT_DEFAULT:
        raise ValidationError("A rule without a user is a product default.", field="source")
    if user is not None and source == PRODUCT_DEFAULT:
        raise ValidationError(
            "A user's rule cannot have the product-default source.", field="source"
        )
    found = capability_by_name(capability)
    scope_rows = _scope_rows(user=user, scope=scope)
    version_row = _lock_policy_version(user)
    now = now or db_now()
    replaced = []
    if replace and user is not None:
        replaced = _live_at_place(user=user, capability=found.name, scope_rows=scope_rows, now=now)
        for old in replaced:
            old.revoked_at = now
            old.save(update_fields=["revoked_at"])
    newest = replaced[-1] if replaced else None
    rule = _insert_rule(
        user=user,
        capability=found,
        effect=effect,
        source=source,
        scope_rows=scope_rows,
        requested_by=requested_by,
        valid_from=valid_from or now,
        valid_until=valid_until,
        now=now,
        version=newest.version + 1 if newest else 1,
        supersedes=newest,
    )
    rule.policy_version_after = _bump(
        version_row, user=user, at=now, rules=[rule.pk, *(old.pk for old in replaced)]
    )
    rule.replaced = replaced
    return rule


def _locked_rule(rule_id, *, owner) -> tuple[PolicyRule, UserPolicyVersion | DefaultsPolicyVersion]:
    """The rule, locked after its owner's version row (the module's lock order). With `owner`,
    another user's rule or a product default is not found (DESIGN habit 5)."""
    pk = as_uuid(rule_id)
    head = PolicyRule.objects.select_related("user").filter(pk=pk).first() if pk else None
    if head is None or (owner is not None and head.user_id != owner.pk):
        raise NotFound("No such rule.")
    version_row = _lock_policy_version(head.user)
    rule = PolicyRule.objects.select_for_update().get(pk=pk)
    rule.user = head.user
    return rule, version_row


def rule_revoke(*, rule_id, owner: User | None = None) -> PolicyRule:
    """Revoke a rule at the database clock (D5: a decision, unlike expiry) and bump its owner's
    version (D7) in the same transaction. Revoking a revoked rule changes nothing and bumps
    nothing, so a retried revoke is harmless."""
    with transaction.atomic():
        rule, version_row = _locked_rule(rule_id, owner=owner)
        if rule.revoked_at is not None:
            rule.policy_version_after = version_row.version
            return rule
        rule.revoked_at = db_now()
        rule.save(update_fields=["revoked_at"])
        rule.policy_version_after = _bump(
            version_row, user=rule.user, rules=[rule.pk], at=rule.revoked_at
        )
        return rule


def rule_change(
    *,
    rule_id,
    owner: User | None = None,
    effect: str = KEEP,
    requested_by=KEEP,
    valid_from: datetime | None = KEEP,
    valid_until: datetime | None = KEEP,
    source: str = KEEP,
) -> PolicyRule:
    """SPEC §6: rules are immutable, so a change revokes the rule and creates its successor
    (same user, capability and scope; `version + 1`) in one transaction with one version bump
    (D7). A successor without a new `valid_from` starts when its predecessor is revoked.
    Changing a revoked rule is a conflict: its successor, if any, is the one to change."""
    if effect is not KEEP:
        require_choice(effect, EFFECTS, field="effect")
    if requested_by is not KEEP:
        require_choice(requested_by, REQUESTERS, field="requested_by", allow_none=True)
    if source is not KEEP:
        require_choice(source, SOURCES, field="source")
    with transaction.atomic():
        rule, version_row = _locked_rule(rule_id, owner=owner)
        if rule.revoked_at is not None:
            raise Conflict("This rule was revoked; change its successor instead.")
        new_source = rule.source if source is KEEP else source
        if (rule.user_id is None) != (new_source == PRODUCT_DEFAULT):
            raise ValidationError(
                "Only a product default has the product-default source.", field="source"
            )
        now = db_now()
        rule.revoked_at = now
        rule.save(update_fields=["revoked_at"])
        successor = _insert_rule(
            user=rule.user,
            capability=rule.capability,
            source=new_source,
            effect=rule.effect if effect is KEEP else effect,
            scope_rows={
                "scope_kind": rule.scope_kind,
                "character_id": rule.character_id,
                "conversation_id": rule.conversation_id,
                "scene": rule.scene,
            },
            requested_by=rule.requested_by if requested_by is KEEP else requested_by,
            valid_from=now if valid_from is KEEP or valid_from is None else valid_from,
            valid_until=rule.valid_until if valid_until is KEEP else valid_until,
            now=now,
            version=rule.version + 1,
            supersedes=rule,
        )
        successor.policy_version_after = _bump(
            version_row, user=rule.user, at=now, rules=[rule.pk, successor.pk]
        )
        return successor


# ---------------------------------------------------------------------------------------------
# The boundaries page's choice


def boundary_set(*, user, capability: str, effect: str, scope: dict) -> str:
    """Make the user's own choice for one capability at one place exactly `effect` (D11).

    Every live `explicit-user` rule of the user at that place (capability and exact scope),
    whatever its `requested_by`, is revoked and the new choice created in one transaction, so
    it never ties with an older choice (D4 `conflicting-rules`). When the only live choice
    there already is this one, for every requester, nothing changes. Returns `created`,
    `changed` or `unchanged`."""
    with transaction.atomic():
        now = db_now()
        same = [
            rule
            for rule in rule_list(user=user, capability=capability)
            if rule.source == EXPLICIT_USER
            and rule.scope.as_dict() == scope
            and (rule.revoked_at is None or rule.revoked_at > now)
            and (rule.valid_until is None or rule.valid_until > now)
        ]
        if len(same) == 1 and same[0].effect == effect and same[0].requested_by is None:
            return "unchanged"
        rule_create_at(
            now=now,
            user=user,
            capability=capability,
            effect=effect,
            source=EXPLICIT_USER,
            scope=scope,
            requested_by=None,
            valid_from=None,
            valid_until=None,
            replace=True,
        )
        return "changed" if same else "created"
