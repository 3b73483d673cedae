"""The boundaries page's read (SPEC §6): for each character, what the companion may do now
(allow / deny / ask) and why, in words, at each place a choice was made; the form each card
starts with; the user's own choices; and the conflicts and shadowed choices the static check
finds. The view (`policy.views`) hands it the card the form was last sent from and the
messages placed at cards, and renders what it answers.

It decides with the pure engine over rules read in bulk (`boundary_overview`) and does not log
those decisions (D10 logs decisions the runtime asks for; showing a page is not one), so
drawing the page writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.contrib import messages
from django.urls import reverse
from django.utils.http import urlencode

from config.clock import db_now
from config.pages import Notice, PagePresenter, day

from .domain import (
    EXPLICIT_USER,
    PRODUCT_DEFAULT,
    REASON_CONFLICTING_RULES,
    REASON_NO_APPLICABLE_RULE,
    Rule,
)
from .forms import EFFECT_CHOICES, BoundaryForm
from .presentation import DECISION_WORDS, capability_name
from .selectors import (
    BoundaryOverview,
    Places,
    boundary_overview,
    boundary_places,
    capability_list,
    rule_list,
)

EFFECT_WORDS = dict(EFFECT_CHOICES)
# The page shows what happens when the companion itself wants to do something.
REQUESTER = "assistant"


def rule_words(rule: Rule, places: Places, *, lower: bool = False) -> str:
    """A rule in words: "Never, with Captain Rowan" (names keep their capitals)."""
    effect = EFFECT_WORDS[rule.effect]
    words = f"{effect.lower() if lower else effect}, {places.scope_words(rule)}"
    if rule.requested_by:
        words += (
            ", only when the "
            f"{'companion' if rule.requested_by == 'assistant' else rule.requested_by} asks"
        )
    return words


def why_words(
    decision, rules_by_id: dict[str, Rule], places: Places, *, elsewhere: bool = False
) -> str:
    """The reason for a decision in words ("you decided", "product default"). `elsewhere`: the
    place is what remains of a character once narrower choices are set apart."""
    if decision.reason == REASON_NO_APPLICABLE_RULE:
        if elsewhere:
            return "No choice of yours covers the rest, so the companion asks you first."
        return "You have not chosen yet, so the companion asks you first."
    if decision.reason == REASON_CONFLICTING_RULES:
        return "Choices that rank the same disagree here, so the companion asks you first."
    top = rules_by_id[decision.rule_ids[0]]
    if top.source == PRODUCT_DEFAULT:
        return f"Product default ({places.scope_words(top)})."
    if top.source == EXPLICIT_USER:
        return f"You decided: {rule_words(top, places, lower=True)}."
    return f"From an answer you confirmed: {rule_words(top, places, lower=True)}."


# A place where the wider decision does not hold, as its exception says it ("… except with
# The Lamplighter: never").
EXCEPTION_WORDS = {"allow": "allowed", "ask": "asks you first", "deny": "never"}


def decision_words(
    decision, rules_by_id: dict[str, Rule], words: dict[str, str] = DECISION_WORDS
) -> str:
    """What the companion may do, in words; a choice that holds only when the companion asks
    (its `requested_by`) says so: "Allowed when the companion asks"."""
    words = words[decision.effect]
    top = rules_by_id.get(decision.rule_ids[0]) if len(decision.rule_ids) == 1 else None
    if top is not None and top.requested_by:
        words += (
            f" when the {'companion' if top.requested_by == 'assistant' else top.requested_by} asks"
        )
    return words


def exceptions_words(exceptions: list[tuple[str, str]]) -> str:
    """The places where a wider decision does not hold: "except with The Lamplighter: never
    and in “Rounds”: asks you first"."""
    if not exceptions:
        return ""
    parts = [f"{where}: {words}" for where, words in exceptions]
    joined = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"except {joined}"


@dataclass(frozen=True)
class Applies:
    """One place on a capability's card and what the companion may do there, with the
    narrower places where that does not hold (on the everywhere card)."""

    where: str
    effect: str
    decision: str
    why: str
    exceptions: str = ""


@dataclass(frozen=True)
class CapabilityRow:
    fid: str  # a unique id prefix for the row's form fields
    name: str
    title: str
    question: str
    effect: str  # the section's own place: everywhere, or the character in general
    decision: str
    why: str
    applies: tuple[Applies, ...]  # that place first, then each narrower place with a choice
    where: str  # the "Where" option the form shows
    choice: str  # the effect the form shows
    open: bool  # the form starts open: just saved from it, or it came back with errors
    notices: tuple = ()  # the message of the save just made from this card


def field_id(section_key: str, capability: str) -> str:
    return f"{section_key}-{capability}".replace(".", "-")


@dataclass(frozen=True)
class CardAsked:
    """The card the form was last sent from, which keeps what was chosen in it: after a save
    the redirect names it (`?section=&capability=&where=`), after an error the posted form
    does (with its `effect`, kept only then)."""

    section: str = ""
    capability: str = ""
    where: str = ""
    effect: str = ""
    refused: bool = False  # the form came back with errors: the card shows the effect posted

    @classmethod
    def of(cls, query: Mapping, *, refused: bool = False) -> CardAsked:
        section, capability, where, effect = (
            str(query.get(name, "")) for name in ("section", "capability", "where", "effect")
        )
        return cls(section, capability, where, effect, refused)


@dataclass(frozen=True)
class BoundaryPost:
    """A boundary choice as posted: its form, bound to the capabilities and the places the user
    can choose, and the card it was sent from (`section`, "" for the form at the page's top),
    whose field ids the form takes so that its errors stand beside that card's fields."""

    form: BoundaryForm
    section: str
    places: list  # the places' choices: (value, words)

    @classmethod
    def of(cls, user, posted: Mapping) -> BoundaryPost:
        places = boundary_places(user, list(rule_list(user=user)))
        all_places = places.choices()
        sections = {"everywhere", *(c.slug for c in places.characters)}
        section = posted.get("section", "")
        section = section if section in sections else ""
        capability = posted.get("capability", "")
        form = BoundaryForm(
            posted,
            capabilities=[(c.name, capability_name(c.name)) for c in capability_list()],
            places=all_places,
            auto_id=f"%s-{field_id(section, capability)}" if section else "id_%s",
        )
        return cls(form, section, all_places)

    def saved(self, outcome: str) -> Notice:
        """The message of a save (`outcome` "unchanged" when the choice already held), beside
        the card it was sent from."""
        data = self.form.cleaned_data
        what = capability_name(data["capability"])
        where = dict(self.places)[data["where"]]
        choice = EFFECT_WORDS[data["effect"]].lower()
        anchor = self.card() or "messages"
        if outcome == "unchanged":
            return Notice(messages.INFO, f"{what} was already set to “{choice}” {where}.", anchor)
        return Notice(messages.SUCCESS, f"Saved: {what} — {choice}, {where}.", anchor)

    def landing(self) -> str:
        """Where a save lands: the page, and from a card that card, in view and open, showing
        the place just chosen."""
        url = reverse("policy:boundaries")
        if not self.section:
            return url
        data = self.form.cleaned_data
        query = urlencode(
            {"section": self.section, "capability": data["capability"], "where": data["where"]}
        )
        return f"{url}?{query}#{self.card()}"

    def card(self) -> str:
        """The anchor of the card it was sent from, or "" from the form at the page's top."""
        if not self.section:
            return ""
        return f"card-{field_id(self.section, self.form.cleaned_data['capability'])}"


@dataclass
class BoundariesPage(PagePresenter):
    sections: list[dict]
    yours: list[dict]
    conflicts: list[dict]
    shadowed: list[dict]
    unplaced: list = field(default_factory=list)  # messages of no card on the page

    not_shown = ("unplaced",)  # the view shows them with the messages of no card


class _Sections:
    """The page's cards: one section for everywhere, then one per character, each with a row
    per capability. The message of a save goes inside the card it was made from (`#card-…`,
    focused); `shown` collects the anchors that got one."""

    def __init__(
        self, user, overview: BoundaryOverview, places: Places, asked: CardAsked, placed: Mapping
    ):
        self.user, self.overview, self.places, self.asked, self.placed = (
            user,
            overview,
            places,
            asked,
            placed,
        )
        self.rules_by_id = overview.rules
        self.order = {
            pk: i for i, pk in enumerate(places.conversations)
        }  # newest conversation first
        self.shown: set[str] = set()

    def decide(self, capability: str, **where):
        return self.overview.decide(capability, REQUESTER, user=self.user.username, **where)

    def narrower(self, name: str, conversations: list[str]) -> list[tuple[str, str | None]]:
        return sorted(
            self.overview.narrower_places(name, conversations),
            key=lambda p: (self.order[p[0]], p[1] or ""),
        )

    def exceptions(self, name: str, general) -> list[tuple[str, str]]:
        """Where "everywhere" does not hold: each character, conversation or scene of the
        user's where the decision differs from it."""

        def said(decision) -> str:
            return decision_words(decision, self.rules_by_id, EXCEPTION_WORDS)

        out = []
        for character in self.places.characters:
            decision = self.decide(name, character=character.slug)
            if said(decision) != said(general):
                out.append((f"with {character.name}", said(decision)))
            mine = [
                pk for pk, c in self.places.conversations.items() if c.character_id == character.pk
            ]
            for conversation, scene in self.narrower(name, mine):
                narrow = self.decide(
                    name, character=character.slug, conversation=conversation, scene=scene
                )
                if said(narrow) != said(decision):
                    where = self.places.place_words(conversation, scene)
                    out.append((where[0].lower() + where[1:], said(narrow)))
        return out

    def applies(self, character, name: str, general, narrower) -> list[Applies]:
        """The card's places: the section's own first, then each narrower one with a choice."""
        rules_by_id, places = self.rules_by_id, self.places
        if character is None:
            here = "Everywhere"
        else:
            here = f"{'Elsewhere with' if narrower else 'With'} {character.name}"
        applies = [
            Applies(
                here,
                general.effect,
                decision_words(general, rules_by_id),
                why_words(general, rules_by_id, places, elsewhere=bool(narrower)),
                "" if character else exceptions_words(self.exceptions(name, general)),
            )
        ]
        for conversation, scene in narrower:
            decision = self.decide(
                name, character=character.slug, conversation=conversation, scene=scene
            )
            applies.append(
                Applies(
                    places.place_words(conversation, scene),
                    decision.effect,
                    decision_words(decision, rules_by_id),
                    why_words(decision, rules_by_id, places),
                )
            )
        return applies

    def row(
        self, character, key: str, options: list[tuple[str, str]], capability, mine: list[str]
    ) -> CapabilityRow:
        name, asked = capability.name, self.asked
        general = self.decide(name, character=character.slug if character else None)
        applies = self.applies(character, name, general, self.narrower(name, mine))
        asked_here = asked.section == key and asked.capability == name
        where = asked.where if asked_here and asked.where in dict(options) else options[0][0]
        if asked_here and asked.refused and asked.effect in EFFECT_WORDS:
            choice = asked.effect
        else:
            choice = self.decide(name, **self.places.context_of(where)).effect
        fid = field_id(key, name)
        notices = tuple(self.placed.get(f"card-{fid}", ()))
        if notices:
            self.shown.add(f"card-{fid}")
        return CapabilityRow(
            fid=fid,
            name=name,
            title=capability_name(name),
            question=capability.question,
            effect=general.effect,
            decision=DECISION_WORDS[general.effect],
            why=applies[0].why,
            applies=tuple(applies),
            where=where,
            choice=choice,
            open=asked_here,
            notices=notices,
        )

    def section(self, character) -> dict:  # a Character of `places`, or None for everywhere
        places = self.places
        key = character.slug if character else "everywhere"
        options = places.choices(character) if character else [("global", "everywhere")]
        mine = [
            pk
            for pk, c in places.conversations.items()
            if character is not None and c.character_id == character.pk
        ]
        return {
            "character": character,
            "key": key,
            "title": f"With {character.name}" if character else "Everywhere",
            "rows": [
                self.row(character, key, options, capability, mine)
                for capability in self.overview.capabilities
            ],
            "places": options,
        }


def _described(rule_id: str, rules_by_id: dict[str, Rule], places: Places) -> str:
    rule = rules_by_id.get(rule_id)
    if rule is None:
        return "a rule"
    prefix = "product default: " if rule.is_default else "your choice: "
    return f"{prefix}{rule_words(rule, places, lower=True)}"


def _yours(overview: BoundaryOverview, places: Places) -> list[dict]:
    """The user's own choices that hold now, by capability."""
    live = sorted(
        (
            r
            for r in overview.rules.values()
            if r.user is not None and r.lapse(overview.now) is None
        ),
        key=lambda r: (capability_name(r.capability).casefold(), r.scope.rank, r.id),
    )
    return [
        {
            "id": r.id,
            "capability": capability_name(r.capability),
            "words": rule_words(r, places),
            "since": day(r.valid_from),
            "effect": r.effect,
        }
        for r in live
    ]


def boundaries_page(user, *, asked: CardAsked, placed: Mapping) -> BoundariesPage:
    """The boundaries page of `user`: `asked`, the card the form was last sent from; `placed`,
    this request's messages by the anchor of the card they belong to."""
    overview = boundary_overview(user, now=db_now())
    rules_by_id = overview.rules
    places = boundary_places(user, overview.own)
    cards = _Sections(user, overview, places, asked, placed)
    sections = [cards.section(None)] + [cards.section(c) for c in places.characters]
    check = overview.check
    conflicts = [
        {
            "capability": capability_name(c.capability),
            "rules": [_described(i, rules_by_id, places) for i in c.rule_ids],
        }
        for c in check.conflicts
    ]
    shadowed = [
        {
            "capability": capability_name(rules_by_id[d.rule_id].capability),
            "rule": _described(d.rule_id, rules_by_id, places),
            "by": _described(d.by, rules_by_id, places) if d.by else "",
        }
        for d in check.dead
        if d.reason == "shadowed"
        and d.rule_id in rules_by_id
        and not rules_by_id[d.rule_id].is_default
    ]
    return BoundariesPage(
        sections=sections,
        yours=_yours(overview, places),
        conflicts=conflicts,
        shadowed=shadowed,
        unplaced=[
            m for anchor, found in placed.items() if anchor not in cards.shown for m in found
        ],
    )
