"""Policy reads shared by the API, the services and (later) the pages. Every query on user data
filters by user first (SPEC §0); capabilities and product defaults are catalog data."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet, Subquery

from config import catalog
from config.errors import NotFound, ValidationError
from conversations import places
from conversations.models import Character, Conversation
from conversations.selectors import conversation_named, conversations_of, scenes_of

from .domain import Decision, DecisionRequest, PolicyContext, PolicyVersion, Rule, RuleCheck
from .engine import check_rules, decide
from .models import (
    Capability,
    DecisionLog,
    DefaultsPolicyVersion,
    MediaJob,
    PolicyRule,
    UserPolicyVersion,
)


def capability_list() -> QuerySet[Capability]:
    return Capability.objects.order_by("name")


@catalog.cached
def catalog_capabilities() -> dict[str, Capability]:
    """Every capability by name, cached per process while the catalog version holds
    (config.catalog). The instances are shared: read them, never change them."""
    return {c.name: c for c in Capability.objects.all()}


def capability_by_name(name, *, field: str = "capability") -> Capability:
    """An unknown capability is bad input naming the field (SPEC §10). From the process cache
    in a request (no query when warm), else one query."""
    if not isinstance(name, str):
        capability = None
    elif catalog.active():
        capability = catalog_capabilities().get(name)
    else:
        capability = Capability.objects.filter(pk=name).first()
    if capability is None:
        raise ValidationError(f"Unknown capability {name!r}.", field=field)
    return capability


def capabilities_by_name(
    names: Iterable[str], *, field: str = "capabilities"
) -> dict[str, Capability]:
    wanted = list(dict.fromkeys(names))
    if catalog.active():
        known = catalog_capabilities()
        found = {name: known[name] for name in wanted if name in known}
    else:
        found = {c.name: c for c in Capability.objects.filter(pk__in=wanted)}
    missing = [name for name in wanted if name not in found]
    if missing:
        raise ValidationError(f"Unknown capability {missing[0]!r}.", field=field)
    return found


def policy_version_of(user) -> PolicyVersion:
    """D7: the defaults' and the user's version, in one query. A missing row counts as 0."""
    user_version = UserPolicyVersion.objects.filter(user=user).values("version")[:1]
    row = (
        DefaultsPolicyVersion.objects.filter(pk=1)
        .annotate(user_version=Subquery(user_version))
        .values("version", "user_version")
        .first()
    )
    if row is None:  # the seeded row is gone (a flushed test database): read the user's alone
        value = (
            UserPolicyVersion.objects.filter(user=user).values_list("version", flat=True).first()
        )
        return PolicyVersion(defaults=0, user=value or 0)
    return PolicyVersion(defaults=row["version"], user=row["user_version"] or 0)


@dataclass(frozen=True)
class ProductDefaults:
    """The product-default rules (catalog data) with their version (D7), read together:
    the version first, so it is never newer than the rules it is reported with."""

    version: int
    # (capability, created_at, id) — the model's order — with the rule's character id.
    rules: tuple[tuple[tuple, int | None, Rule], ...]

    def candidates(
        self, capabilities: Iterable[str], *, character_id=None, now: datetime | None = None
    ) -> list[tuple[tuple, Rule]]:
        """What `rules_for_decision`'s query selects among the defaults, in Python."""
        wanted = set(capabilities)
        out = []
        for order, rule_character, rule in self.rules:
            if rule.capability not in wanted:
                continue
            if rule.scope.kind != "global" and (
                character_id is None or rule_character != character_id
            ):
                continue
            if now is not None and not (
                rule.valid_from <= now
                and (rule.valid_until is None or rule.valid_until > now)
                and (rule.revoked_at is None or rule.revoked_at > now)
            ):
                continue
            out.append((order, rule))
        return out


@catalog.cached
def product_defaults() -> ProductDefaults:
    """The product defaults and their version, cached per process while the catalog version
    holds (config.catalog); two queries when cold."""
    version = (
        DefaultsPolicyVersion.objects.filter(pk=1).values_list("version", flat=True).first() or 0
    )
    rows = PolicyRule.objects.filter(user__isnull=True).select_related("character")
    return ProductDefaults(
        version,
        tuple(((r.capability_id, r.created_at, r.pk), r.character_id, r.to_domain()) for r in rows),
    )


def user_policy_version(user) -> int:
    """D7: the user's own version (0 without a row); one query."""
    return (
        UserPolicyVersion.objects.filter(user=user).values_list("version", flat=True).first() or 0
    )


def _rules_of_user_and_defaults(user) -> QuerySet[PolicyRule]:
    return PolicyRule.objects.filter(Q(user=user) | Q(user__isnull=True)).select_related(
        "user", "character"
    )


def rules_for_decision(
    *,
    user,
    capabilities: Iterable[str],
    character_id=None,
    conversation_id=None,
    scene: str | None = None,
    now: datetime | None = None,
    defaults: ProductDefaults | None = None,
) -> list[Rule]:
    """The rules that may be D1 candidates, in one query whatever the number of rules or
    capabilities: the user's and the product defaults, for these capabilities, whose scope can
    match the context and (when `now` is given) that are in force at `now`. The engine applies
    D1 again, so this filter only has to be no narrower than D1. With `defaults` (the cached
    product defaults) the query reads the user's rules only and the defaults are filtered
    alike in Python."""
    capabilities = list(capabilities)
    if defaults is None:
        rules = _rules_of_user_and_defaults(user)
    else:
        rules = PolicyRule.objects.filter(user=user).select_related("user", "character")
    rules = rules.filter(capability_id__in=capabilities).filter(
        _scope_filter(character_id, conversation_id, scene)
    )
    if now is not None:
        rules = rules.filter(
            Q(valid_from__lte=now),
            Q(valid_until__isnull=True) | Q(valid_until__gt=now),
            Q(revoked_at__isnull=True) | Q(revoked_at__gt=now),
        )
    if defaults is None:
        return [rule.to_domain() for rule in rules]
    return merged_rules(
        [((r.capability_id, r.created_at, r.pk), r.to_domain()) for r in rules],
        defaults,
        capabilities,
        character_id=character_id,
        now=now,
    )


def _scope_filter(character_id, conversation_id, scene) -> Q:
    scope = Q(scope_kind="global")
    if character_id is not None:
        scope |= Q(scope_kind="character", character_id=character_id)
    if conversation_id is not None:
        scope |= Q(scope_kind="conversation", conversation_id=conversation_id)
        if scene is not None:
            scope |= Q(scope_kind="scene", conversation_id=conversation_id, scene=scene)
    return scope


def user_rules_for_context(
    *, user, capabilities: Iterable[str], character_id, conversation_id
) -> list[PolicyRule]:
    """The user's own rules for these capabilities whose scope can match a context of this
    character and conversation (any scene of it), in force or not (D1 decides that)."""
    scope = Q(scope_kind="global") | Q(scope_kind="character", character_id=character_id)
    scope |= Q(scope_kind__in=("conversation", "scene"), conversation_id=conversation_id)
    return list(
        PolicyRule.objects.filter(user=user, capability_id__in=list(capabilities))
        .filter(scope)
        .select_related("user", "character")
    )


def merged_rules(
    user_rules: list[tuple[tuple, Rule]],
    defaults: ProductDefaults,
    capabilities: Iterable[str],
    *,
    character_id=None,
    now: datetime | None = None,
) -> list[Rule]:
    """The user's rules (each with its place in the model's order) and the product defaults'
    candidates, in the model's order (capability, created_at, id)."""
    merged = list(user_rules) + defaults.candidates(
        capabilities, character_id=character_id, now=now
    )
    merged.sort(key=lambda pair: pair[0])
    return [rule for _, rule in merged]


def rules_for_explain(
    *, user, capability: str, defaults: ProductDefaults | None = None
) -> list[Rule]:
    """Every rule of the user and every product default for one capability: explain tells why
    each was or was not a candidate. With `defaults`, those come from the cache."""
    if defaults is None:
        return [
            rule.to_domain()
            for rule in _rules_of_user_and_defaults(user).filter(capability_id=capability)
        ]
    merged = [
        ((r.capability_id, r.created_at, r.pk), r.to_domain())
        for r in PolicyRule.objects.filter(user=user, capability_id=capability).select_related(
            "user", "character"
        )
    ]
    merged += [(order, rule) for order, _, rule in defaults.rules if rule.capability == capability]
    merged.sort(key=lambda pair: pair[0])
    return [rule for _, rule in merged]


def rule_list(*, user=None, capability: str | None = None) -> QuerySet[PolicyRule]:
    """A user's rules, or the product defaults when `user` is None."""
    rules = (
        PolicyRule.objects.filter(user=user)
        if user is not None
        else PolicyRule.objects.filter(user__isnull=True)
    )
    if capability:
        rules = rules.filter(capability_id=capability)
    return rules.select_related("user", "character").order_by("capability_id", "created_at", "id")


def as_uuid(value) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        return None


def rule_by_id(rule_id) -> PolicyRule:
    pk = as_uuid(rule_id)
    rule = (
        PolicyRule.objects.select_related("user", "character").filter(pk=pk).first() if pk else None
    )
    if rule is None:
        raise NotFound("No such rule.")
    return rule


def media_job_by_id(job_id) -> MediaJob:
    pk = as_uuid(job_id)
    job = MediaJob.objects.select_related("capability").filter(pk=pk).first() if pk else None
    if job is None:
        raise NotFound("No such media job.")
    return job


def decision_by_id(decision_id, *, field: str = "decision_id") -> DecisionLog:
    pk = as_uuid(decision_id)
    decision = DecisionLog.objects.filter(pk=pk).first() if pk else None
    if decision is None:
        raise ValidationError("Unknown decision.", field=field)
    return decision


def media_job_of_user(user, job_id, *, field: str = "media_job") -> MediaJob:
    pk = as_uuid(job_id)
    job = MediaJob.objects.filter(user=user, pk=pk).first() if pk else None
    if job is None:
        raise ValidationError("Unknown media job for this user.", field=field)
    return job


def rule_check_of_user(user, *, now: datetime) -> RuleCheck:
    """The static check (conflicts, rules that can never decide) over a user's rules and the
    product defaults, from `now` on, for the pages and the admin. Three queries: the rules and
    the user's conversations (so a character rule is known to cover them)."""
    rules = [rule.to_domain() for rule in _rules_of_user_and_defaults(user)]
    conversations = Conversation.objects.filter(user=user).values_list("pk", "character__slug")
    return check_rules(
        rules, now=now, conversation_characters={str(pk): slug for pk, slug in conversations}
    )


@dataclass(frozen=True)
class BoundaryOverview:
    """What the boundaries page shows, read in bulk: the capabilities, the user's own rules
    and the product defaults (as rows and as the pure core's rules), and the decisions D1–D6
    for any place — everywhere, a character, one of its conversations or a scene in one — at
    `now`. Nothing is logged: D10 logs the decisions the runtime asks for, and showing a page
    is not one."""

    now: datetime
    capabilities: list[Capability]
    own: list[PolicyRule]
    defaults: list[PolicyRule]
    rules: dict[str, Rule]  # the pure core's rules by id, own and defaults
    check: RuleCheck

    def decide(
        self,
        capability: str,
        requested_by: str,
        *,
        user: str,
        character: str | None = None,
        conversation: str | None = None,
        scene: str | None = None,
    ) -> Decision:
        """The engine's decision for that place, exactly as the runtime would get it there."""
        context = PolicyContext(
            user=user, now=self.now, character=character, conversation=conversation, scene=scene
        )
        return decide(DecisionRequest(capability, requested_by), list(self.rules.values()), context)

    def narrower_places(
        self, capability: str, conversations: Iterable[str]
    ) -> list[tuple[str, str | None]]:
        """The places narrower than a character where one of the user's live choices for
        `capability` exists, among `conversations` (ids): `(conversation, None)` for a choice
        made for the conversation, `(conversation, scene)` for one made for a scene in it. The
        page decides at each of them, so a choice that applies only there is shown where it
        applies (D3: a narrower scope ranks higher within a source)."""
        wanted = set(conversations)
        found: set[tuple[str, str | None]] = set()
        for rule in self.rules.values():
            scope = rule.scope
            if (
                rule.capability != capability
                or rule.is_default
                or scope.kind not in ("conversation", "scene")
                or scope.conversation not in wanted
                or rule.lapse(self.now) is not None
            ):
                continue
            found.add((scope.conversation, scope.scene if scope.kind == "scene" else None))
        return sorted(found, key=lambda place: (place[0], place[1] is not None, place[1] or ""))


def boundary_overview(user, *, now: datetime) -> BoundaryOverview:
    own = list(rule_list(user=user))
    defaults = list(rule_list())
    rules = {r.id: r for r in (rule.to_domain() for rule in own + defaults)}
    return BoundaryOverview(
        now, list(capability_list()), own, defaults, rules, rule_check_of_user(user, now=now)
    )


# ---------------------------------------------------------------------------------------------
# The boundaries page's places


class Places:
    """The places a choice can apply to, and rule scopes in words: everywhere, a character
    the user knows (from conversations or earlier choices), one of the user's conversations,
    or a scene in one (a scene its turns were in, or one an earlier choice names)."""

    def __init__(
        self,
        conversations: list[Conversation],
        rules: list[PolicyRule],
        scenes: Iterable[tuple[str, str]] = (),
    ):
        self.conversations = {str(c.pk): c for c in conversations}
        characters: dict[str, Character] = {c.character.slug: c.character for c in conversations}
        named = []
        for rule in rules:
            if rule.character_id is not None and rule.user_id is not None:
                characters.setdefault(rule.character.slug, rule.character)
            if rule.scope_kind == "scene" and rule.user_id is not None and rule.scene:
                named.append((str(rule.conversation_id), rule.scene))
        self.characters = sorted(characters.values(), key=lambda c: (c.name.casefold(), c.slug))
        # (conversation id, scene) of the user's own conversations, each once.
        self.scenes = [
            place for place in dict.fromkeys([*scenes, *named]) if place[0] in self.conversations
        ]

    def conversation_title(self, conversation_id: str | None) -> str:
        """A conversation as people name it: its title, or when it started."""
        return conversation_named(self.conversations.get(conversation_id or ""), with_whom=False)

    def conversation_words(self, conversation_id: str | None) -> str:
        return conversation_named(self.conversations.get(conversation_id or ""))

    def character_name(self, slug: str | None) -> str:
        return next((c.name for c in self.characters if c.slug == slug), slug or "a character")

    def scope_words(self, rule: Rule) -> str:
        scope = rule.scope
        return places.place_words(
            scope.kind,
            character_name=self.character_name(scope.character),
            conversation=self.conversation_words(scope.conversation),
            scene=scope.scene,
        )

    def place_words(self, conversation_id: str, scene: str | None) -> str:
        """A place on a character's card: "In “Rooftop greenhouse”", or a scene in it."""
        title = self.conversation_title(conversation_id)
        return f"In the “{scene}” scene of {title}" if scene is not None else f"In {title}"

    def choices(self, character: Character | None = None) -> list[tuple[str, str]]:
        """The "where" options: all of them (to validate), or one character's section's (whose
        conversations need no "with …"). Each conversation is followed by the scenes in it."""
        everywhere = ("global", places.EVERYWHERE)
        if character is None:
            out = [
                everywhere,
                *((f"character:{c.slug}", f"with {c.name}") for c in self.characters),
            ]
        else:
            out = [(f"character:{character.slug}", f"with {character.name}"), everywhere]
        for pk, conversation in self.conversations.items():
            if character is not None and conversation.character_id != character.pk:
                continue
            in_it = [(f"conversation:{pk}", "conversation", None)]
            in_it += [
                (f"scene:{pk}:{scene}", "scene", scene) for c, scene in self.scenes if c == pk
            ]
            out += [
                (
                    where,
                    places.place_words(
                        kind,
                        conversation=conversation_named(conversation, with_whom=character is None),
                        scene=scene,
                    ),
                )
                for where, kind, scene in in_it
            ]
        return out

    def context_of(self, where: str) -> dict:
        """The decision context (character, conversation, scene) of a "where" option."""
        kind, _, ref = where.partition(":")
        if kind == "character":
            return {"character": ref}
        conversation, _, scene = ref.partition(":")
        if kind in ("conversation", "scene") and conversation in self.conversations:
            context = {
                "character": self.conversations[conversation].character.slug,
                "conversation": conversation,
            }
            return {**context, "scene": scene} if kind == "scene" else context
        return {}


def boundary_places(user, rules: list[PolicyRule]) -> Places:
    """The places the boundaries page offers `user`: their conversations (newest first), the
    scenes their turns were in, and the characters and scenes their own `rules` name. Two
    queries."""
    return Places(list(conversations_of(user)), rules, scenes_of(user))
