"""The boundaries page (SPEC §6): for each character, what the companion may do now
(allow / deny / ask) and why, in words; controls to always allow, always ask or never, at a
chosen scope; revoking a choice; and the conflicts the static check finds.

The page decides with the pure engine over rules read in bulk. It does not log those
decisions (D10 logs decisions the runtime asks for; showing a page is not one), so a page view
writes nothing."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from config.clock import db_now
from config.errors import Conflict, ValidationError
from config.pages import day, form_errors_from, messages_by_anchor, next_url, notify, private_page

from .domain import (
    EXPLICIT_USER,
    PRODUCT_DEFAULT,
    REASON_CONFLICTING_RULES,
    REASON_NO_APPLICABLE_RULE,
    Rule,
)
from .forms import EFFECT_CHOICES, BoundaryForm
from .presentation import DECISION_WORDS, capability_name
from .selectors import Places, boundary_overview, boundary_places, capability_list, rule_list
from .services import boundary_set, rule_revoke

EFFECT_WORDS = dict(EFFECT_CHOICES)
# The page shows what happens when the companion itself wants to do something.
REQUESTER = "assistant"


def rule_words(rule: Rule, places: Places, *, lower: bool = False) -> str:
    """A rule in words: "Never, with Captain Rowan" (names keep their capitals)."""
    effect = EFFECT_WORDS[rule.effect]
    words = f"{effect.lower() if lower else effect}, {places.scope_words(rule)}"
    if rule.requested_by:
        words += f", only when the {'companion' if rule.requested_by == 'assistant' else rule.requested_by} asks"
    return words


def why_words(decision, rules_by_id: dict[str, Rule], places: Places, *, elsewhere: bool = False) -> str:
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


def decision_words(decision, rules_by_id: dict[str, Rule], words: dict[str, str] = DECISION_WORDS) -> str:
    """What the companion may do, in words; a choice that holds only when the companion asks
    (its `requested_by`) says so: "Allowed when the companion asks"."""
    words = words[decision.effect]
    top = rules_by_id.get(decision.rule_ids[0]) if len(decision.rule_ids) == 1 else None
    if top is not None and top.requested_by:
        words += f" when the {'companion' if top.requested_by == 'assistant' else top.requested_by} asks"
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


def _page(request, *, error_form: BoundaryForm | None = None):
    user = request.user
    overview = boundary_overview(user, now=db_now())
    rules_by_id = overview.rules
    places = boundary_places(user, overview.own)
    order = {pk: i for i, pk in enumerate(places.conversations)}  # newest conversation first
    # The card the form was last sent from keeps what was chosen in it: after a save the
    # redirect names it (?section=&capability=&where=), after an error the posted form does.
    asked = request.POST if error_form is not None else request.GET
    asked_section, asked_capability, asked_where, asked_effect = (
        str(asked.get(name, "")) for name in ("section", "capability", "where", "effect"))
    # The message of a save goes inside the card it was made from (`#card-…`, focused).
    placed, loose = messages_by_anchor(request)
    shown: set[str] = set()

    def decide(capability: str, **where):
        return overview.decide(capability, REQUESTER, user=user.username, **where)

    def exceptions(name: str, general) -> list[tuple[str, str]]:
        """Where "everywhere" does not hold: each character, conversation or scene of the
        user's where the decision differs from it."""
        def said(decision) -> str:
            return decision_words(decision, rules_by_id, EXCEPTION_WORDS)

        out = []
        for character in places.characters:
            decision = decide(name, character=character.slug)
            if said(decision) != said(general):
                out.append((f"with {character.name}", said(decision)))
            mine = [pk for pk, c in places.conversations.items() if c.character_id == character.pk]
            for conversation, scene in sorted(overview.narrower_places(name, mine),
                                              key=lambda p: (order[p[0]], p[1] or "")):
                narrow = decide(name, character=character.slug, conversation=conversation, scene=scene)
                if said(narrow) != said(decision):
                    where = places.place_words(conversation, scene)
                    out.append((where[0].lower() + where[1:], said(narrow)))
        return out

    def section(character) -> dict:  # a Character of `places`, or None for everywhere
        key = character.slug if character else "everywhere"
        options = places.choices(character) if character else [("global", "everywhere")]
        mine = [pk for pk, c in places.conversations.items() if character is not None and c.character_id == character.pk]
        rows = []
        for capability in overview.capabilities:
            name = capability.name
            general = decide(name, character=character.slug if character else None)
            narrower = sorted(overview.narrower_places(name, mine), key=lambda p: (order[p[0]], p[1] or ""))
            if character is None:
                here = "Everywhere"
            else:
                here = f"{'Elsewhere with' if narrower else 'With'} {character.name}"
            applies = [Applies(here, general.effect, decision_words(general, rules_by_id),
                               why_words(general, rules_by_id, places, elsewhere=bool(narrower)),
                               "" if character else exceptions_words(exceptions(name, general)))]
            for conversation, scene in narrower:
                decision = decide(name, character=character.slug, conversation=conversation, scene=scene)
                applies.append(Applies(places.place_words(conversation, scene), decision.effect,
                                       decision_words(decision, rules_by_id), why_words(decision, rules_by_id, places)))
            asked_here = asked_section == key and asked_capability == name
            where = asked_where if asked_here and asked_where in dict(options) else options[0][0]
            if asked_here and error_form is not None and asked_effect in EFFECT_WORDS:
                choice = asked_effect
            else:
                choice = decide(name, **places.context_of(where)).effect
            fid = field_id(key, name)
            notices = tuple(placed.get(f"card-{fid}", ()))
            if notices:
                shown.add(f"card-{fid}")
            rows.append(CapabilityRow(
                fid=fid, name=name, title=capability_name(name), question=capability.question,
                effect=general.effect, decision=DECISION_WORDS[general.effect],
                why=applies[0].why, applies=tuple(applies), where=where, choice=choice,
                open=asked_here, notices=notices,
            ))
        return {
            "character": character,
            "key": key,
            "title": f"With {character.name}" if character else "Everywhere",
            "rows": rows,
            "places": options,
        }

    sections = [section(None)] + [section(c) for c in places.characters]
    now = overview.now
    live = sorted(
        (r for r in rules_by_id.values() if r.user is not None and r.lapse(now) is None),
        key=lambda r: (capability_name(r.capability).casefold(), r.scope.rank, r.id),
    )
    yours = [
        {"id": r.id, "capability": capability_name(r.capability), "words": rule_words(r, places),
         "since": day(r.valid_from), "effect": r.effect}
        for r in live
    ]
    check = overview.check

    def described(rule_id: str) -> str:
        rule = rules_by_id.get(rule_id)
        if rule is None:
            return "a rule"
        prefix = "product default: " if rule.is_default else "your choice: "
        return f"{prefix}{rule_words(rule, places, lower=True)}"

    conflicts = [
        {"capability": capability_name(c.capability), "rules": [described(i) for i in c.rule_ids]}
        for c in check.conflicts
    ]
    shadowed = [
        {"capability": capability_name(rules_by_id[d.rule_id].capability), "rule": described(d.rule_id),
         "by": described(d.by) if d.by else ""}
        for d in check.dead
        if d.reason == "shadowed" and d.rule_id in rules_by_id and not rules_by_id[d.rule_id].is_default
    ]
    loose += [m for anchor, found in placed.items() if anchor not in shown for m in found]
    return render(request, "policy/boundaries.html", {
        "sections": sections, "yours": yours, "conflicts": conflicts, "shadowed": shadowed,
        "effects": EFFECT_CHOICES, "error_form": error_form, "loose_messages": loose,
    })


@private_page
def boundaries(request):
    return _page(request)


@private_page
@require_POST
def boundary_set_view(request):
    """Set always allow / always ask / never for a capability at a chosen place. Back on the
    page, the card it was sent from is in view and open, showing the place just chosen."""
    user = request.user
    places = boundary_places(user, list(rule_list(user=user)))
    all_places = places.choices()
    sections = {"everywhere", *(c.slug for c in places.characters)}
    section = request.POST.get("section", "")
    section = section if section in sections else ""
    capability = request.POST.get("capability", "")
    form = BoundaryForm(
        request.POST,
        capabilities=[(c.name, capability_name(c.name)) for c in capability_list()],
        places=all_places,
        auto_id=f"%s-{field_id(section, capability)}" if section else "id_%s",
    )
    if form.is_valid():
        try:
            outcome = boundary_set(
                user=user, capability=form.cleaned_data["capability"], effect=form.cleaned_data["effect"],
                scope=form.scope(),
            )
        except ValidationError as exc:
            form_errors_from(form, exc, fields={"scope.kind": "where", "scope.character": "where",
                                                "scope.conversation": "where"})
        except Conflict:
            messages.error(request, "That choice changed at the same moment somewhere else, so nothing was "
                                    "saved. Here is what applies now; please choose again.")
            return redirect("policy:boundaries")
        else:
            what = capability_name(form.cleaned_data["capability"])
            where = dict(all_places)[form.cleaned_data["where"]]
            choice = EFFECT_WORDS[form.cleaned_data["effect"]].lower()
            anchor = f"card-{field_id(section, form.cleaned_data['capability'])}" if section else "messages"
            if outcome == "unchanged":
                notify(request, messages.INFO, f"{what} was already set to “{choice}” {where}.", anchor)
            else:
                notify(request, messages.SUCCESS, f"Saved: {what} — {choice}, {where}.", anchor)
            url = reverse("policy:boundaries")
            if section:
                query = urlencode({"section": section, "capability": form.cleaned_data["capability"],
                                   "where": form.cleaned_data["where"]})
                url += f"?{query}#card-{field_id(section, form.cleaned_data['capability'])}"
            return redirect(url)
    return _page(request, error_form=form)


@private_page
@require_POST
def rule_revoke_view(request, rule_id):
    """Revoke one of your choices (D5). Another user's rule or a product default is a 404."""
    rule = rule_revoke(rule_id=rule_id, owner=request.user)
    messages.success(request, f"Removed your choice for {capability_name(rule.capability_id)}. "
                              "What applies now is shown below.")
    return redirect(next_url(request, "policy:boundaries"))
