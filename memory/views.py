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

from dataclasses import dataclass

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
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

from . import services
from .domain import MemoryRecord as DomainRecord
from .forms import SEARCH_MAX, CorrectForm, MemorySwitchesForm
from .list_page import PAGE_SIZE, SWITCHES_ANCHOR, memory_list_page
from .presentation import (
    ScopeNames,
    Sentence,
    Wording,
    plain_label,
    told_by,
)
from .selectors.pages import key_templates, no_longer_true
from .selectors.records import memory_get, registry
from .selectors.resolution import remembered_now
from .switches import memory_settings_of

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


@private_page
def memory_list_view(request):
    """What is remembered now, grouped by character, a page at a time, newest first or A–Z,
    filtered by character or certainty and searched by a term kept in the session
    (`memory.list_page`)."""
    placed, loose = _pending(request)
    term = request.session.get(SEARCH_SESSION_KEY, "")
    listing = memory_list_page(
        request.user, asked=request.GET, term=term if isinstance(term, str) else "", placed=placed
    )
    return render(
        request,
        "memory/list.html",
        {
            **listing.context(),
            "loose_messages": loose + listing.unplaced,
            "switches": MemorySwitchesForm(initial=_switch_values(request.user)),
            "switch_notices": placed.get(SWITCHES_ANCHOR, []),
        },
    )


@private_page
@require_POST
def memory_switches_view(request):
    """I8 from the page: learning and memory use on or off, recorded as the user's change.
    Nothing is deleted either way."""
    form = MemorySwitchesForm(request.POST)
    if not form.is_valid():
        notify(
            request,
            messages.ERROR,
            "Those switches could not be read; nothing changed.",
            SWITCHES_ANCHOR,
        )
        return back_to(request, SWITCHES_ANCHOR)
    before = memory_settings_of(request.user)
    after = services.memory_settings_set(
        user=request.user,
        changed_by="user",
        learn=form.cleaned_data["learn"],
        use=form.cleaned_data["use"],
    )
    if after == before:
        notify(request, messages.INFO, "Nothing changed.", SWITCHES_ANCHOR)
    else:
        learning = (
            "learns from your messages" if after.learn else "learns nothing new from your messages"
        )
        using = (
            "uses these memories in conversations"
            if after.use
            else "uses none of these memories in conversations"
        )
        # I8: neither switch deletes anything; that reassures only when something was turned off.
        turned_off = (before.learn and not after.learn) or (before.use and not after.use)
        notify(
            request,
            messages.SUCCESS,
            f"Saved: the companion {learning} and {using}."
            + (" Nothing was deleted." if turned_off else ""),
            SWITCHES_ANCHOR,
        )
    return back_to(request, SWITCHES_ANCHOR)


@private_page
@require_POST
def memory_filter_view(request):
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


@private_page
@require_POST
def memory_confirm_view(request, memory_id):
    """SPEC §2 Confirm: the same value again, as your own word; nothing changes when it
    already is — also when the card posted was confirmed since it was shown (the service
    answers `unchanged` with the record that holds it, as the API does)."""
    try:
        result = services.memory_confirm(record_id=memory_id, user=request.user)
    except Conflict:
        notify(
            request,
            messages.ERROR,
            "That memory is no longer current, so there was nothing to confirm. "
            "The list shows what is remembered now.",
        )
        return back_to(request)
    label = key_label(result.record.key)
    if result.outcome == "unchanged":
        notify(
            request,
            messages.INFO,
            f"Nothing changed: “{label}” was already confirmed by you.",
            f"m-{result.record.id}",
        )
    else:
        notify(
            request,
            messages.SUCCESS,
            f"Confirmed “{label}”. It now counts as something you said yourself.",
            f"m-{result.record.id}",
        )
    return back_to(request, f"m-{result.record.id}")


@private_page
def memory_correct_view(request, memory_id):
    """SPEC §2 Correct: a new value that replaces this one from now on (and is never
    overruled by something the companion infers later, W7); the same value is a confirm.
    GET shows the form on its own page; the memories page also has it inline."""
    row = memory_get(memory_id, user=request.user)
    label = key_label(row.key)
    if request.method == "POST":
        form = CorrectForm(request.POST)
        if form.is_valid():
            try:
                result = services.memory_correct(
                    record_id=row.pk, value=form.cleaned_data["value"], user=request.user
                )
            except ValidationError as exc:
                form_errors_from(form, exc)
            except Conflict:
                notify(
                    request,
                    messages.ERROR,
                    f"“{label}” changed in the meantime, so nothing was corrected. "
                    "The list shows what is remembered now.",
                )
                return back_to(request)
            else:
                if result.record is None:
                    notify(
                        request,
                        messages.ERROR,
                        f"Nothing was saved for “{label}”: you had asked the "
                        "companion to forget that value.",
                    )
                    return back_to(request)
                anchor = f"m-{result.record.id}"
                if result.outcome == "unchanged":
                    notify(
                        request,
                        messages.INFO,
                        f"Nothing changed: “{label}” already holds that value, as you said it.",
                        anchor,
                    )
                elif result.record.authority == "user-confirmed":
                    notify(
                        request,
                        messages.SUCCESS,
                        f"Confirmed “{label}”: the value you saved is the one "
                        "remembered. It now counts as something you said yourself.",
                        anchor,
                    )
                else:
                    notify(
                        request,
                        messages.SUCCESS,
                        f"Corrected “{label}”. The old value will not be used again.",
                        anchor,
                    )
                return back_to(request, anchor)
    else:
        form = CorrectForm(initial={"value": row.value})
    names = ScopeNames(request.user, [row.scope_id])
    return render(
        request,
        "memory/correct.html",
        {
            "record": row,
            "label": label,
            "scope_words": names.words(row.scope_id),
            "form": form,
            "next": next_url(request),
        },
    )


@private_page
@require_POST
def memory_retract_view(request, memory_id):
    """W10: "that is not true any more" — the slot closes now; history keeps it, and the
    memories page shows an undo in the card's place."""
    label = key_label(memory_get(memory_id, user=request.user).key)
    try:
        services.memory_retract(record_id=memory_id, user=request.user)
    except Conflict:
        notify(
            request,
            messages.ERROR,
            f"“{label}” was forgotten, so there is nothing to mark as no longer true.",
        )
        return back_to(request)
    notify(
        request,
        messages.SUCCESS,
        f"“{label}” is no longer treated as true. Its history keeps the old value, "
        "and older messages will not bring it back.",
        f"m-{memory_id}",
    )
    return back_to(request, f"m-{memory_id}")


@private_page
@require_POST
def memory_restore_view(request, memory_id):
    """Undo "no longer true": the value is asserted again as yours, from now on (the time
    between shows in its history)."""
    label = key_label(memory_get(memory_id, user=request.user).key)
    try:
        result = services.memory_restore(record_id=memory_id, user=request.user)
    except Conflict as exc:
        notify(request, messages.ERROR, f"Nothing to undo for “{label}”: {exc.detail}")
        return back_to(request)
    if result.record is None:
        notify(
            request,
            messages.ERROR,
            f"“{label}” could not come back: you had asked the companion to forget it.",
        )
        return back_to(request)
    anchor = f"m-{result.record.id}"
    notify(
        request,
        messages.SUCCESS,
        f"“{label}” is remembered again, as something you said yourself, from now "
        "on. Its history shows the time it was not.",
        anchor,
    )
    return back_to(request, anchor)


@dataclass(frozen=True)
class RetractedRow:
    record: DomainRecord
    label: str
    sentence: Sentence | None
    scope_words: str
    retracted_on: str
    base: str
    told_by: str = ""  # M3: "told by <name> on <day>" for a value an assistant stored

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def anchor(self) -> str:
        return f"m-{self.record.id}"


@private_page
def no_longer_true_list_view(request):
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
        RetractedRow(
            r,
            words.label(r.key),
            words.sentence(r.key, r.value),
            names.words(r.scope_id),
            when(r.retracted_at),
            f"{root}{r.id}/",
            told_by(r),
        )
        for r in page.object_list
    ]
    return render(
        request,
        "memory/no_longer_true.html",
        {
            "rows": rows,
            "page": page,
            "paginated": paginator.num_pages > 1,
            "list_url": root,
            "page_range": list(
                paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)
            ),
        },
    )
