"""The memory pages (issue 5; SPEC §1–§4): what the companion remembers now, the history of
one slot, what was forgotten, and the actions confirm, correct, retract and forget.

Each action validates a form, calls the service the API calls, adds a message and redirects
(POST-redirect-GET). Reads are bulk, so a page costs the same number of queries for five
memories or five thousand. Messages name the memory by its label, never by its value: a value
does not belong in a cookie or a session."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from config.errors import Conflict, ValidationError
from config.pages import day, form_errors_from, next_url, private_page, when

from . import services
from .domain import SCOPE_NARROWNESS, USER_AUTHORITIES, normalise_value
from .domain import MemoryRecord as DomainRecord
from .forms import CorrectForm, ForgetForm, MemoryFilterForm
from .presentation import (
    CERTAINTY,
    SET_BY,
    Provenance,
    ScopeNames,
    certainty,
    from_message,
    original_of,
    provenance,
    source_messages,
    status_words,
)
from .selectors import memory_get, registry, remembered_now, slot_history, tombstones_of


@dataclass(frozen=True)
class MemoryRow:
    record: DomainRecord
    label: str
    scope_words: str
    certainty: str
    certainty_label: str
    certainty_help: str
    provenance: Provenance
    set_by: str
    not_in_chats: str
    confirmable: bool
    base: str  # this memory's page URL prefix, `/memories/<id>/` (one reverse per page, not per row)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def value(self) -> str:
        return self.record.value


def _not_in_chats(record: DomainRecord, certainty: str) -> str:
    """P1/P2 in words: a remembered value the prompt projection will still leave out."""
    if record.authority not in USER_AUTHORITIES and not record.sources:
        return "Not used in conversations: no message of yours backs it up."
    if certainty == "low-confidence":
        return "Not used in conversations: too unsure."
    return ""


def _group_title(names: ScopeNames, slug: str | None) -> tuple[str, str]:
    if slug is None:
        return "Everywhere", "Every companion may use these, in every conversation."
    name = names.character_name(slug)
    return f"With {name}", f"Only {name} uses these (some only in one conversation or scene)."


# ---------------------------------------------------------------------------------------------
# Pages


@private_page
def memory_list(request):
    """What is remembered now, grouped by character, with where each memory came from."""
    user = request.user
    remembered = remembered_now(user)
    active, keys, by_id = remembered.active, remembered.registry, remembered.by_id
    names = ScopeNames(user, {r.scope_id for r in active})
    originals = {r.id: original_of(r, by_id) for r in active if r.authority == "user-confirmed" and not r.sources}
    found = source_messages(
        user, [s for r in active for s in r.sources] + [s for o in originals.values() if o for s in o.sources]
    )

    form = MemoryFilterForm(request.GET or None, characters=names.sorted_characters())
    query, only = "", ""
    if form.is_bound and form.is_valid():
        query = normalise_value(form.cleaned_data["q"] or "")
        only = form.cleaned_data["character"] or ""

    root = reverse("memory:list")
    groups: dict[str | None, list[MemoryRow]] = defaultdict(list)
    for record in active:
        group = names.group_of(record.scope_id)
        if only == "everywhere" and group is not None:
            continue
        if only and only != "everywhere" and group not in (None, only):
            continue
        label = keys.label(record.key)
        scope_words = names.words(record.scope_id)
        if query and not any(query in normalise_value(t) for t in (label, record.key, record.value, scope_words)):
            continue
        level = certainty(record)
        certainty_label, certainty_help = CERTAINTY[level]
        groups[group].append(MemoryRow(
            record=record, label=label, scope_words=scope_words, certainty=level,
            certainty_label=certainty_label, certainty_help=certainty_help,
            provenance=provenance(record, found, originals.get(record.id)),
            set_by=SET_BY[record.authority], not_in_chats=_not_in_chats(record, level),
            confirmable=record.authority not in USER_AUTHORITIES,
            base=f"{root}{record.id}/",
        ))
    ordered_groups = []
    slugs = sorted((g for g in groups if g is not None), key=lambda s: (names.character_name(s).casefold(), s))
    for slug in ([None] if None in groups else []) + slugs:
        rows = sorted(groups[slug], key=lambda r: (
            r.label.casefold(), SCOPE_NARROWNESS[r.record.scope.kind], normalise_value(r.value), r.id,
        ))
        title, intro = _group_title(names, slug)
        ordered_groups.append({"slug": slug, "title": title, "intro": intro, "rows": rows})
    return render(request, "memory/list.html", {
        "groups": ordered_groups,
        "form": form,
        "filtered": bool(query or only),
        "total": sum(len(g["rows"]) for g in ordered_groups),
        "anything": bool(active),
        "here": request.get_full_path(),
        "here_query": urlencode({"next": request.get_full_path()}),
    })


def _label(key: str) -> str:
    return registry([key]).label(key)


@private_page
@require_POST
def memory_confirm(request, memory_id):
    """SPEC §2 Confirm: the same value again, as your own word."""
    try:
        result = services.memory_confirm(record_id=memory_id, user=request.user)
    except Conflict:
        messages.error(request, "That memory is no longer current, so there was nothing to confirm. "
                                "The list shows what is remembered now.")
    else:
        label = _label(result.record.key)
        if result.outcome == "unchanged":
            messages.info(request, f"“{label}” was already confirmed by you.")
        else:
            messages.success(request, f"Confirmed “{label}”. It now counts as something you said yourself.")
    return redirect(next_url(request))


@private_page
def memory_correct(request, memory_id):
    """SPEC §2 Correct: a new value that replaces this one from now on (and is never
    overruled by something the companion infers later, W7). GET shows the form on its own
    page; the memories page also has it inline."""
    row = memory_get(memory_id, user=request.user)
    label = _label(row.key)
    if request.method == "POST":
        form = CorrectForm(request.POST)
        if form.is_valid():
            try:
                services.memory_correct(record_id=row.pk, value=form.cleaned_data["value"], user=request.user)
            except ValidationError as exc:
                form_errors_from(form, exc)
            except Conflict:
                messages.error(request, f"“{label}” changed in the meantime, so nothing was corrected. "
                                        "The list shows what is remembered now.")
                return redirect(next_url(request))
            else:
                messages.success(request, f"Corrected “{label}”. The old value will not be used again.")
                return redirect(next_url(request))
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
    """W10: "that is not true any more" — the slot closes now; history keeps it."""
    label = _label(memory_get(memory_id, user=request.user).key)
    try:
        services.memory_retract(record_id=memory_id, user=request.user)
    except Conflict:
        messages.error(request, f"“{label}” was forgotten, so there is nothing to mark as no longer true.")
    else:
        messages.success(request, f"“{label}” is no longer treated as true. Its history keeps the old value, "
                                  "and older messages will not bring it back.")
    return redirect(next_url(request))


@private_page
def memory_forget(request, memory_id):
    """F1/F2: a confirmation page that says plainly what forgetting does; POST forgets."""
    user = request.user
    row = memory_get(memory_id, user=user)
    keys = registry([row.key])
    label, many = keys.label(row.key), keys.is_many(row.key)
    if row.status == "forgotten":
        messages.info(request, f"“{label}” was already forgotten.")
        return redirect("memory:forgotten")
    if request.method == "POST":
        form = ForgetForm(request.POST, many=many)
        if form.is_valid():
            everywhere = form.cleaned_data["everywhere"]
            try:
                services.memory_forget(
                    record_id=row.pk, user=user, everywhere=everywhere,
                    whole_key=bool(form.cleaned_data.get("whole_key")),
                )
            except Conflict:
                messages.info(request, f"“{label}” was already forgotten.")
            else:
                where = "everywhere" if everywhere else ScopeNames(user, [row.scope_id]).words(row.scope_id)
                messages.success(request, f"Forgotten: “{label}” ({where}). The value is erased, and old "
                                          "messages will not bring it back.")
            return redirect(next_url(request))
    else:
        form = ForgetForm(many=many)
    return render(request, "memory/forget.html", {
        "record": row, "label": label, "many": many, "form": form,
        "scope_words": ScopeNames(user, [row.scope_id]).words(row.scope_id),
        "user_scope": row.scope_kind == "user",
        "next": next_url(request),
    })


@dataclass(frozen=True)
class HistoryRow:
    record: DomainRecord
    value: str | None  # None: forgotten, the value is gone
    forgotten_on: str
    starts: str
    ends: str
    set_by: str
    status: str
    current: bool
    provenance: Provenance | None


@private_page
def memory_history(request, memory_id):
    """W11: every value of this memory's slot over time, with its window and who set it.
    Forgotten values appear as "forgotten on …", never with their value."""
    user = request.user
    row = memory_get(memory_id, user=user)
    history = slot_history(user, key=row.key, scope_id=row.scope_id)
    active = history.current
    found = source_messages(user, [s for r in history.records for s in r.sources])
    rows = []
    for record in history.records:
        forgotten = record.status == "forgotten"
        end = history.ends.get(record.id)
        explanation = history.remembered.explain(record.id)
        current = record.id in active
        rows.append(HistoryRow(
            record=record,
            value=None if forgotten else record.value,
            forgotten_on=day(record.status_since) if forgotten else "",
            starts=when(record.valid_from),
            ends=when(end) if end is not None else "still open",
            set_by=SET_BY[record.authority],
            status="current" if current else status_words(record, explanation.reason if explanation else None),
            current=current,
            provenance=None if forgotten else from_message(record, found),
        ))
    live = [r for r in rows if r.current]
    names = ScopeNames(user, [row.scope_id])
    return render(request, "memory/history.html", {
        "label": history.label, "key": row.key, "many": history.many, "rows": rows,
        "scope_words": names.words(row.scope_id), "current": live,
    })


@private_page
def forgotten_list(request):
    """F1/F4: what was forgotten — the slot and scope, never the value — and a way to let
    the companion learn it again."""
    user = request.user
    tombstones = sorted(tombstones_of(user), key=lambda t: (-t.forgotten_at.timestamp(), t.id))
    keys = registry()
    names = ScopeNames(user, {t.scope_id for t in tombstones})
    root = reverse("memory:forgotten")
    rows = [
        {
            "id": t.id, "learn_again": f"{root}{t.id}/learn-again", "label": keys.label(t.key),
            "key": t.key, "scope_words": names.words(t.scope_id), "one_value": bool(t.value_hash),
            "many": keys.is_many(t.key), "forgotten_on": when(t.forgotten_at),
        }
        for t in tombstones
    ]
    return render(request, "memory/forgotten.html", {"rows": rows})


@private_page
@require_POST
def tombstone_delete(request, tombstone_id):
    """F4: "let it learn this again". The erased value does not come back."""
    tombstone = services.tombstone_delete(tombstone_id=tombstone_id, user=request.user)
    messages.success(request, f"The companion may learn “{_label(tombstone.key)}” again from what you say. "
                              "The erased value does not come back by itself.")
    return redirect(next_url(request, "memory:forgotten"))
