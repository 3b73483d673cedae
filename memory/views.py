"""The memory pages (SPEC §1–§5): what the companion remembers now, the history of one slot,
what was marked no longer true, what was forgotten, and the actions confirm, correct, "no
longer true" and its undo, forget, and forget several.

Each action validates a form, calls the service the API calls, adds a message and redirects
(POST-redirect-GET) to the card it acted on: the address ends in the card's anchor
(`#m-<memory id>`, a `tabindex="-1"` target, focused by pages.js where scripts run) and the
message is shown beside that card — or, where the card is gone, in its place. Reads are bulk,
so a page costs the same number of queries for five memories or five thousand. Messages name
a memory by its label, never by its value: a value does not belong in a cookie or a session.
A search term does not belong in an address either (SPEC §12): the search form is posted and
the term is kept in the session."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from config.errors import Conflict, ValidationError
from config.pages import (
    form_errors_from,
    messages_by_anchor,
    next_url,
    notify,
    private_page,
    when,
)
from conversations.domain import SCOPE_NARROWNESS

from . import services
from .domain import USER_AUTHORITIES, normalise_value
from .domain import MemoryRecord as DomainRecord
from .forms import SEARCH_MAX, CorrectForm, MemoryFilterForm, MemorySwitchesForm
from .page_selectors import key_templates, memory_skeletons, no_longer_true
from .presentation import (
    CERTAINTY,
    Provenance,
    ScopeNames,
    Sentence,
    Wording,
    certainty,
    original_of,
    plain_label,
    provenance,
    source_messages,
)
from .selectors import memory_get, registry, remembered_now
from .switches import memory_settings_of

PAGE_SIZE = 25
SEARCH_SESSION_KEY = "memory_search"
MESSAGES_ANCHOR = "messages"
_pending = messages_by_anchor


# ---------------------------------------------------------------------------------------------
# Where an action lands


def back_to(request, anchor: str = MESSAGES_ANCHOR, default: str = "memory:list"):
    """Back where the action came from (`next`, a path on this site), at `anchor`."""
    return redirect(f"{next_url(request, default).split('#', 1)[0]}#{anchor}")


def _switch_values(user) -> dict:
    current = memory_settings_of(user)
    return {"switches": "1", "learn": current.learn, "use": current.use}


def key_label(key: str) -> str:
    return registry([key]).labels.get(key) or plain_label(key)


# ---------------------------------------------------------------------------------------------
# What is remembered now


@dataclass
class MemoryRow:
    """One card of the memories page: a remembered value, or the place of one that was just
    marked no longer true (`retracted`) or forgotten (`forgotten`, no value)."""

    id: str
    key: str
    scope_id: str
    label: str
    group: str | None
    recorded_at: datetime
    order: tuple
    kind: str = "memory"
    record: DomainRecord | None = None
    sentence: Sentence | None = None
    scope_words: str = ""
    certainty: str = ""
    certainty_label: str = ""
    certainty_help: str = ""
    provenance: Provenance | None = None
    confirmable: bool = False
    restorable: bool = False
    base: str = ""  # this memory's page URL prefix, `/memories/<id>/`
    notices: list = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"m-{self.id}"

    @property
    def value(self) -> str | None:
        return self.record.value if self.record is not None else None


def _order(sort: str, label: str, scope_kind: str, value: str, recorded_at: datetime, id_: str) -> tuple:
    if sort == "az":
        return (label.casefold(), SCOPE_NARROWNESS[scope_kind], normalise_value(value), id_)
    return (-recorded_at.timestamp(), label.casefold(), id_)


def _group_title(names: ScopeNames, slug: str | None, *, use: bool = True) -> tuple[str, str]:
    """A group's heading and what it says of use in conversations; with `use` off (I8) none
    is used now, whoever they are kept for."""
    if slug is None:
        if not use:
            return "Everywhere", "Kept for every companion; none is used in conversations while memory use is off."
        return "Everywhere", "Every companion may use these, in every conversation."
    name = names.character_name(slug)
    if not use:
        return f"With {name}", f"Kept for {name} only; none is used in conversations while memory use is off."
    return f"With {name}", f"Only {name} uses these (some only in one conversation or scene)."


# I8: each card's line on use in conversations while `use` is off.
NOT_USED_NOW = "Not used in conversations now: you turned memory use off."


def _group_anchor(slug: str | None) -> str:
    return "g-everywhere" if slug is None else f"g-{slug}"


def _filter_query(form: MemoryFilterForm) -> QueryDict:
    """The page's address parameters of a valid filter (never the search term)."""
    query = QueryDict(mutable=True)
    if form.is_bound and form.is_valid():
        for name in ("character", "certainty", "sort"):
            if form.cleaned_data.get(name):
                query[name] = form.cleaned_data[name]
    return query


@private_page
def memory_list(request):
    """What is remembered now, grouped by character, a page at a time, newest first or A–Z,
    filtered by character or certainty and searched by a term kept in the session."""
    user = request.user
    switches = memory_settings_of(user)
    remembered = remembered_now(user)
    active, keys, by_id = remembered.active, remembered.registry, remembered.by_id
    placed, loose = _pending(request)
    wanted = {anchor[2:] for anchor in placed if anchor.startswith("m-")}
    active_ids = {r.id for r in active}
    skeletons = memory_skeletons(user, wanted - active_ids - set(by_id))
    names = ScopeNames(user, {r.scope_id for r in remembered.records} | {s.scope_id for s in skeletons})
    words = Wording(keys.labels, key_templates())

    query = request.session.get(SEARCH_SESSION_KEY, "")
    query = query if isinstance(query, str) else ""
    data = request.GET.copy()
    data["q"] = query
    form = MemoryFilterForm(data, characters=names.sorted_characters())
    only, level_wanted, sort = "", "", "newest"
    if form.is_valid():
        only = form.cleaned_data["character"] or ""
        level_wanted = form.cleaned_data["certainty"] or ""
        sort = form.cleaned_data["sort"] or "newest"
    needle = normalise_value(query)

    restorable = {r.id for r in no_longer_true(remembered)}
    groups: dict[str | None, list[MemoryRow]] = defaultdict(list)
    for record in active:
        group = names.group_of(record.scope_id)
        if only == "everywhere" and group is not None:
            continue
        if only and only != "everywhere" and group not in (None, only):
            continue
        level = certainty(record)
        if level_wanted and level != level_wanted:
            continue
        label = words.label(record.key)
        scope_words = names.words(record.scope_id)
        if needle and not any(needle in normalise_value(t) for t in (label, record.key, record.value, scope_words)):
            continue
        groups[group].append(MemoryRow(
            id=record.id, key=record.key, scope_id=record.scope_id, label=label, group=group,
            recorded_at=record.recorded_at, record=record, scope_words=scope_words, certainty=level,
            order=_order(sort, label, record.scope.kind, record.value, record.recorded_at, record.id),
        ))
    # The place of a card that was just marked no longer true or forgotten, with its message.
    for anchor in placed:
        rid = anchor[2:] if anchor.startswith("m-") else None
        record = by_id.get(rid or "")
        if record is not None and rid not in active_ids and record.retracted_at is not None:
            label = words.label(record.key)
            group = names.group_of(record.scope_id)
            groups[group].append(MemoryRow(
                id=record.id, key=record.key, scope_id=record.scope_id, label=label, group=group,
                recorded_at=record.recorded_at, record=record, kind="retracted",
                order=_order(sort, label, record.scope.kind, record.value, record.recorded_at, record.id),
            ))
    for skeleton in skeletons:
        label = words.label(skeleton.key)
        group = names.group_of(skeleton.scope_id)
        groups[group].append(MemoryRow(
            id=skeleton.id, key=skeleton.key, scope_id=skeleton.scope_id, label=label, group=group,
            recorded_at=skeleton.recorded_at, kind="forgotten",
            order=_order(sort, label, skeleton.scope_id.split(":", 1)[0], "", skeleton.recorded_at, skeleton.id),
        ))

    slugs = sorted((g for g in groups if g is not None), key=lambda s: (names.character_name(s).casefold(), s))
    ordered = [row for slug in ([None] if None in groups else []) + slugs
               for row in sorted(groups[slug], key=lambda r: r.order)]

    # The page: the one asked for, or — right after an action — the one holding its card.
    paginator = Paginator(ordered, PAGE_SIZE)
    number = request.GET.get("page")
    # `?card=<id>` (the transcript's "What the companion used" links a card): its page.
    asked_card = f"m-{request.GET.get('card', '')}"
    for index, row in enumerate(ordered):
        if row.anchor in placed or row.anchor == asked_card:
            number = index // PAGE_SIZE + 1
            break
    page = paginator.get_page(number)

    rows = list(page.object_list)
    originals = {
        r.id: original_of(r.record, by_id) for r in rows
        if r.record is not None and r.record.authority == "user-confirmed" and not r.record.sources
    }
    found = source_messages(user, [s for r in rows if r.record is not None for s in r.record.sources]
                            + [s for o in originals.values() if o for s in o.sources])
    root = reverse("memory:list")
    shown = set()
    for row in rows:
        row.base = f"{root}{row.id}/"
        row.notices = placed.get(row.anchor, [])
        shown.add(row.anchor)
        if row.record is not None:
            row.sentence = words.sentence(row.key, row.record.value)
            row.scope_words = row.scope_words or names.words(row.scope_id)
        if row.kind == "memory":
            row.certainty_label, row.certainty_help = CERTAINTY[row.certainty]
            if not switches.use:
                row.certainty_help = NOT_USED_NOW
            row.provenance = provenance(row.record, found, originals.get(row.id))
            row.confirmable = row.record.authority not in USER_AUTHORITIES
        elif row.kind == "retracted":
            row.restorable = row.id in restorable
    shown.add(SWITCHES_ANCHOR)  # the switches' card shows its own message
    loose += [m for anchor, found_messages in placed.items() if anchor not in shown for m in found_messages]

    page_groups: list[dict] = []
    for row in rows:
        if not page_groups or page_groups[-1]["slug"] != row.group:
            title, intro = _group_title(names, row.group, use=switches.use)
            page_groups.append({"slug": row.group, "anchor": _group_anchor(row.group), "title": title,
                                "intro": intro, "rows": []})
        page_groups[-1]["rows"].append(row)

    params = _filter_query(form)
    here = params.copy()
    if page.number > 1:
        here["page"] = page.number
    here_path = f"{root}?{here.urlencode()}" if here else root
    return render(request, "memory/list.html", {
        "groups": page_groups,
        "page": page,
        "paginated": paginator.num_pages > 1,
        "page_range": list(paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)),
        "page_query": params.urlencode(),
        "form": form,
        "query": query,
        "filtered": bool(query or only or level_wanted),
        "total": paginator.count,
        "anything": bool(active),
        "forgotten_before": bool(remembered.tombstones),
        "no_longer_true": len(restorable),
        "loose_messages": loose,
        "switches": MemorySwitchesForm(initial=_switch_values(request.user)),
        "switch_notices": placed.get(SWITCHES_ANCHOR, []),
        "here": here_path,
        "here_query": urlencode({"next": here_path}),
    })


SWITCHES_ANCHOR = "switches"


@private_page
@require_POST
def memory_switches(request):
    """I8 from the page: learning and memory use on or off, recorded as the user's change.
    Nothing is deleted either way."""
    form = MemorySwitchesForm(request.POST)
    if not form.is_valid():
        notify(request, messages.ERROR, "Those switches could not be read; nothing changed.", SWITCHES_ANCHOR)
        return back_to(request, SWITCHES_ANCHOR)
    before = memory_settings_of(request.user)
    after = services.memory_settings_set(user=request.user, changed_by="user",
                                         learn=form.cleaned_data["learn"], use=form.cleaned_data["use"])
    if after == before:
        notify(request, messages.INFO, "Nothing changed.", SWITCHES_ANCHOR)
    else:
        learning = "learns from your messages" if after.learn else "learns nothing new from your messages"
        using = "uses these memories in conversations" if after.use else "uses none of these memories in conversations"
        # I8: neither switch deletes anything; that reassures only when something was turned off.
        turned_off = (before.learn and not after.learn) or (before.use and not after.use)
        notify(request, messages.SUCCESS, f"Saved: the companion {learning} and {using}."
                                          + (" Nothing was deleted." if turned_off else ""), SWITCHES_ANCHOR)
    return back_to(request, SWITCHES_ANCHOR)


@private_page
@require_POST
def memory_filter(request):
    """The search and filter form (posted, SPEC §12): the term goes into the session, the
    non-private choices into the list's address. "Show everything" clears both."""
    if request.POST.get("reset"):
        request.session.pop(SEARCH_SESSION_KEY, None)
        return redirect("memory:list")
    term = request.POST.get("q", "")
    term = term.strip() if isinstance(term, str) and not request.POST.get("clear") else ""
    params = QueryDict(mutable=True)
    for name in ("character", "certainty", "sort"):
        value = request.POST.get(name, "")
        if value and len(value) <= 200 and value.isprintable():
            params[name] = value
    if len(term) > SEARCH_MAX or not term.isprintable():
        notify(request, messages.ERROR, f"Search for at most {SEARCH_MAX} characters of text.")
    elif term:
        request.session[SEARCH_SESSION_KEY] = term
    else:
        request.session.pop(SEARCH_SESSION_KEY, None)
    url = reverse("memory:list")
    return redirect(f"{url}?{params.urlencode()}" if params else url)


# ---------------------------------------------------------------------------------------------
# Confirm, correct, no longer true and its undo


def _already_yours(user, row) -> DomainRecord | None:
    """The record that holds `row`'s slot now when it is the user's own word for the same
    value: `row` was confirmed (or corrected to the same value) since the page that posted
    this was shown — another tab, the back button, a second click. SPEC §2: confirming what
    the user already confirmed changes nothing, and the page says so at that card."""
    if row.status == "forgotten":
        return None
    wanted = normalise_value(row.value)
    for record in remembered_now(user, keys=[row.key]).active:
        if (record.scope_id == row.scope_id and record.key == row.key
                and record.authority in USER_AUTHORITIES and normalise_value(record.value) == wanted):
            return record
    return None


@private_page
@require_POST
def memory_confirm(request, memory_id):
    """SPEC §2 Confirm: the same value again, as your own word; nothing changes when it
    already is — also when the card posted was confirmed since it was shown."""
    try:
        result = services.memory_confirm(record_id=memory_id, user=request.user)
    except Conflict:
        row = memory_get(memory_id, user=request.user)
        yours = _already_yours(request.user, row)
        if yours is not None:
            anchor = f"m-{yours.id}"
            notify(request, messages.INFO, f"Nothing changed: “{key_label(row.key)}” was already confirmed by you.",
                    anchor)
            return back_to(request, anchor)
        notify(request, messages.ERROR, "That memory is no longer current, so there was nothing to confirm. "
                                         "The list shows what is remembered now.")
        return back_to(request)
    label = key_label(result.record.key)
    if result.outcome == "unchanged":
        notify(request, messages.INFO, f"Nothing changed: “{label}” was already confirmed by you.",
                f"m-{result.record.id}")
    else:
        notify(request, messages.SUCCESS, f"Confirmed “{label}”. It now counts as something you said yourself.",
                f"m-{result.record.id}")
    return back_to(request, f"m-{result.record.id}")


@private_page
def memory_correct(request, memory_id):
    """SPEC §2 Correct: a new value that replaces this one from now on (and is never
    overruled by something the companion infers later, W7); the same value is a confirm.
    GET shows the form on its own page; the memories page also has it inline."""
    row = memory_get(memory_id, user=request.user)
    label = key_label(row.key)
    if request.method == "POST":
        form = CorrectForm(request.POST)
        if form.is_valid():
            try:
                result = services.memory_correct(record_id=row.pk, value=form.cleaned_data["value"],
                                                 user=request.user)
            except ValidationError as exc:
                form_errors_from(form, exc)
            except Conflict:
                yours = _already_yours(request.user, row)
                if yours is not None and normalise_value(form.cleaned_data["value"]) == normalise_value(row.value):
                    anchor = f"m-{yours.id}"
                    notify(request, messages.INFO, f"Nothing changed: “{label}” already holds that value, "
                                                    "as you said it.", anchor)
                    return back_to(request, anchor)
                notify(request, messages.ERROR, f"“{label}” changed in the meantime, so nothing was corrected. "
                                                 "The list shows what is remembered now.")
                return back_to(request)
            else:
                if result.record is None:
                    notify(request, messages.ERROR, f"Nothing was saved for “{label}”: you had asked the "
                                                     "companion to forget that value.")
                    return back_to(request)
                anchor = f"m-{result.record.id}"
                if result.outcome == "unchanged":
                    notify(request, messages.INFO, f"Nothing changed: “{label}” already holds that value, "
                                                    "as you said it.", anchor)
                elif result.record.authority == "user-confirmed":
                    notify(request, messages.SUCCESS, f"Confirmed “{label}”: the value you saved is the one "
                                                       "remembered. It now counts as something you said yourself.",
                            anchor)
                else:
                    notify(request, messages.SUCCESS, f"Corrected “{label}”. The old value will not be used again.",
                            anchor)
                return back_to(request, anchor)
    else:
        form = CorrectForm(initial={"value": row.value})
    names = ScopeNames(request.user, [row.scope_id])
    return render(request, "memory/correct.html", {
        "record": row, "label": label, "scope_words": names.words(row.scope_id), "form": form,
        "next": next_url(request),
    })


@private_page
@require_POST
def memory_retract(request, memory_id):
    """W10: "that is not true any more" — the slot closes now; history keeps it, and the
    memories page shows an undo in the card's place."""
    label = key_label(memory_get(memory_id, user=request.user).key)
    try:
        services.memory_retract(record_id=memory_id, user=request.user)
    except Conflict:
        notify(request, messages.ERROR, f"“{label}” was forgotten, so there is nothing to mark as no longer true.")
        return back_to(request)
    notify(request, messages.SUCCESS, f"“{label}” is no longer treated as true. Its history keeps the old value, "
                                       "and older messages will not bring it back.", f"m-{memory_id}")
    return back_to(request, f"m-{memory_id}")


@private_page
@require_POST
def memory_restore(request, memory_id):
    """Undo "no longer true": the value is asserted again as yours, from now on (the time
    between shows in its history)."""
    label = key_label(memory_get(memory_id, user=request.user).key)
    try:
        result = services.memory_restore(record_id=memory_id, user=request.user)
    except Conflict as exc:
        notify(request, messages.ERROR, f"Nothing to undo for “{label}”: {exc.detail}")
        return back_to(request)
    if result.record is None:
        notify(request, messages.ERROR, f"“{label}” could not come back: you had asked the companion to forget it.")
        return back_to(request)
    anchor = f"m-{result.record.id}"
    notify(request, messages.SUCCESS, f"“{label}” is remembered again, as something you said yourself, from now "
                                       "on. Its history shows the time it was not.", anchor)
    return back_to(request, anchor)


@dataclass(frozen=True)
class RetractedRow:
    record: DomainRecord
    label: str
    sentence: Sentence | None
    scope_words: str
    retracted_on: str
    base: str

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def anchor(self) -> str:
        return f"m-{self.record.id}"


@private_page
def no_longer_true_list(request):
    """What you marked no longer true, while nothing else is remembered in its place: each
    with an undo (W10, then a new assert from now)."""
    user = request.user
    remembered = remembered_now(user)
    retracted = no_longer_true(remembered)
    paginator = Paginator(retracted, PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    names = ScopeNames(user, {r.scope_id for r in page.object_list})
    words = Wording(remembered.registry.labels, key_templates({r.key for r in page.object_list}))
    root = reverse("memory:list")
    rows = [
        RetractedRow(r, words.label(r.key), words.sentence(r.key, r.value), names.words(r.scope_id),
                     when(r.retracted_at), f"{root}{r.id}/")
        for r in page.object_list
    ]
    return render(request, "memory/no_longer_true.html", {
        "rows": rows, "page": page, "paginated": paginator.num_pages > 1, "list_url": root,
        "page_range": list(paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)),
    })


