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

from django.contrib import messages
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from config.errors import Conflict, ValidationError
from config.pages import (
    Notice,
    form_errors_from,
    messages_by_anchor,
    next_url,
    notify,
    private_page,
)

from . import notices, services
from .correct_page import correct_page
from .forms import SEARCH_MAX, CorrectForm, MemorySwitchesForm
from .list_page import PAGE_SIZE, SWITCHES_ANCHOR, memory_list_page  # noqa: F401  (tests read PAGE_SIZE here)
from .no_longer_true_page import no_longer_true_page
from .presentation import plain_label
from .selectors.records import memory_get, registry
from .switches import memory_settings_of

SEARCH_SESSION_KEY = "memory_search"
MESSAGES_ANCHOR = "messages"
_pending = messages_by_anchor


# ---------------------------------------------------------------------------------------------
# Where an action lands


def back_to(request, anchor: str = MESSAGES_ANCHOR, default: str = "memory:list"):
    """Back where the action came from (`next`, a path on this site), at `anchor`."""
    return redirect(f"{next_url(request, default).split('#', 1)[0]}#{anchor}")


def told(request, notice: Notice, default: str = "memory:list"):
    """Leave `notice` and land back where the action came from, at the notice's anchor."""
    notice.add_to(request)
    return back_to(request, notice.anchor, default)


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
        return told(request, notices.switches_unread())
    before = memory_settings_of(request.user)
    after = services.memory_settings_set(
        user=request.user,
        changed_by="user",
        learn=form.cleaned_data["learn"],
        use=form.cleaned_data["use"],
    )
    return told(request, notices.switches_set(before, after))


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
        return told(request, notices.confirm_conflict())
    return told(request, notices.confirmed(result, key_label(result.record.key)))


@private_page
def memory_correct_view(request, memory_id):
    """SPEC §2 Correct: a new value that replaces this one from now on (and is never
    overruled by something the companion infers later, W7); the same value is a confirm.
    GET shows the form on its own page; the memories page also has it inline."""
    row = memory_get(memory_id, user=request.user)
    label = key_label(row.key)
    posted = request.method == "POST"
    form = CorrectForm(request.POST) if posted else CorrectForm(initial={"value": row.value})
    if posted and form.is_valid():
        try:
            result = services.memory_correct(
                record_id=row.pk, value=form.cleaned_data["value"], user=request.user
            )
        except ValidationError as exc:
            form_errors_from(form, exc)
        except Conflict:
            return told(request, notices.correct_conflict(label))
        else:
            return told(request, notices.corrected(result, label))
    page = correct_page(request.user, row, label, form, next_url(request))
    return render(request, "memory/correct.html", page)


@private_page
@require_POST
def memory_retract_view(request, memory_id):
    """W10: "that is not true any more" — the slot closes now; history keeps it, and the
    memories page shows an undo in the card's place."""
    label = key_label(memory_get(memory_id, user=request.user).key)
    try:
        services.memory_retract(record_id=memory_id, user=request.user)
    except Conflict:
        return told(request, notices.retract_conflict(label))
    return told(request, notices.retracted(label, memory_id))


@private_page
@require_POST
def memory_restore_view(request, memory_id):
    """Undo "no longer true": the value is asserted again as yours, from now on (the time
    between shows in its history)."""
    label = key_label(memory_get(memory_id, user=request.user).key)
    try:
        result = services.memory_restore(record_id=memory_id, user=request.user)
    except Conflict as exc:
        return told(request, notices.restore_conflict(label, exc))
    return told(request, notices.restored(result, label))


@private_page
def no_longer_true_list_view(request):
    """What you marked no longer true, while nothing else is remembered in its place: each
    with an undo (W10, then a new assert from now; `memory.no_longer_true_page`)."""
    page = no_longer_true_page(request.user, request.GET.get("page"))
    return render(request, "memory/no_longer_true.html", page)
