"""The memory pages about the past (SPEC §4, W11, F1–F4): forgetting one memory or a
selection, a memory's history over time, and what was forgotten with the way to let the
companion learn it again. Each action lands back on the card or list it came from."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from config.errors import Conflict
from config.pages import (
    next_url,
    notify,
    private_page,
    when,
)

from . import forget_pages, forgetting
from .forms import ForgetForm
from .history_page import history_page
from .presentation import (
    ScopeNames,
    plain_label,
    told_by_words,
)
from .selectors.pages import forgotten_entries
from .selectors.records import memory_get, registry
from .selectors.resolution import remembered_now
from .views import back_to, key_label

# ---------------------------------------------------------------------------------------------
# Forget


@private_page
def memory_forget_view(request, memory_id):
    """F1/F2: a confirmation page that says plainly what forgetting does; POST forgets."""
    user = request.user
    row = memory_get(memory_id, user=user)
    keys = registry([row.key])
    label, many = keys.labels.get(row.key) or plain_label(row.key), keys.is_many(row.key)
    if row.status == "forgotten":
        messages.info(request, f"“{label}” was already forgotten.")
        return redirect("memory:forgotten")
    if request.method == "POST":
        form = ForgetForm(request.POST, many=many)
        if form.is_valid():
            everywhere = form.cleaned_data["everywhere"]
            try:
                tombstone = forgetting.memory_forget(
                    record_id=row.pk,
                    user=user,
                    everywhere=everywhere,
                    whole_key=bool(form.cleaned_data.get("whole_key")),
                )
            except Conflict:
                notify(request, messages.INFO, f"“{label}” was already forgotten.")
                return back_to(request)
            where = (
                "everywhere" if everywhere else ScopeNames(user, [row.scope_id]).words(row.scope_id)
            )
            notify(
                request,
                messages.SUCCESS,
                f"Forgotten: “{label}” ({where}). The value is erased"
                f"{withheld_words(tombstone.withheld_messages)}, and old "
                "messages will not bring it back.",
                f"m-{row.pk}",
            )
            return back_to(request, f"m-{row.pk}")
    else:
        form = ForgetForm(many=many)
    return render(
        request,
        "memory/forget.html",
        {
            **forget_pages.forget_page(user, row, label),
            "record": row,
            "told_by": told_by_words(row.told_by_name, row.recorded_at)
            if row.told_by_connection
            else "",
            "label": label,
            "many": many,
            "form": form,
            "next": next_url(request),
        },
    )


@private_page
@require_POST
def memory_forget_selected_view(request):
    """Forget several at once: the first post (the ticked cards) shows one confirmation page
    listing what will be forgotten; posting that page forgets them. Only what is remembered
    now can be chosen: anything else that was posted (an old card, another user's id, not an
    id at all) is left out and said so."""
    user = request.user
    remembered = remembered_now(user)
    by_id = {r.id: r for r in remembered.active}
    posted = [value for value in request.POST.getlist("selected") if isinstance(value, str)]
    chosen = [by_id[value] for value in dict.fromkeys(posted) if value in by_id]
    skipped = len(set(posted)) - len(chosen)
    if not chosen:
        notify(
            request,
            messages.ERROR,
            "Nothing was forgotten: choose at least one memory that is remembered now.",
        )
        return back_to(request)
    if request.POST.get("confirm"):
        labels = sorted({_label_of(remembered, r.key) for r in chosen}, key=str.casefold)
        tombstones = forgetting.memory_forget_selected(record_ids=[r.id for r in chosen], user=user)
        n = len(chosen)
        notify(
            request,
            messages.SUCCESS,
            f"Forgotten: {n} memor{'y' if n == 1 else 'ies'} "
            f"({', '.join(f'“{label}”' for label in labels)}). The values are "
            f"erased{withheld_words(forgetting.withheld_total(tombstones), 'them')}, "
            "and old messages will not bring them back.",
        )
        return back_to(request)
    return render(
        request,
        "memory/forget_selected.html",
        {
            "page": forget_pages.forget_selected_page(user, remembered, chosen),
            "skipped": skipped,
            "next": next_url(request),
        },
    )


def withheld_words(n: int, what: str = "it") -> str:
    """F6 in the success message: how many messages the companion stops seeing."""
    if n == 0:
        return ""
    return f", the companion no longer sees the {n} message{'' if n == 1 else 's'} that held {what}"


def _label_of(remembered, key: str) -> str:
    return remembered.registry.labels.get(key) or plain_label(key)


# ---------------------------------------------------------------------------------------------
# History


@private_page
def memory_history_view(request, memory_id):
    """W11: every value of this memory's slot over time, with its window and who set it
    (`memory.history_page`)."""
    user = request.user
    row = memory_get(memory_id, user=user)
    return render(request, "memory/history.html", history_page(user, row))


# ---------------------------------------------------------------------------------------------
# Forgotten


@private_page
def forgotten_list_view(request):
    """F1/F4: what was forgotten — the slot and scope, never the value — who asked (you, or
    support on your behalf; never support's reason), and a way to let the companion learn it
    again."""
    user = request.user
    entries = forgotten_entries(user)
    keys = registry()
    names = ScopeNames(user, {t.scope_id for t in entries})
    root = reverse("memory:forgotten")
    rows = [
        {
            "id": t.id,
            "anchor": f"t-{t.id}",
            "learn_again": f"{root}{t.id}/learn-again",
            "label": keys.labels.get(t.key) or plain_label(t.key),
            "key": t.key,
            "scope_words": names.forget_words(t.scope_id),
            "one_value": t.one_value,
            "many": keys.is_many(t.key),
            "forgotten_on": when(t.forgotten_at),
            "by_support": t.forgotten_by == "support",
        }
        for t in entries
    ]
    return render(request, "memory/forgotten.html", {"rows": rows})


@private_page
@require_POST
def tombstone_delete_view(request, tombstone_id):
    """F4: "let it learn this again". The erased value does not come back."""
    tombstone = forgetting.tombstone_delete(tombstone_id=tombstone_id, user=request.user)
    notify(
        request,
        messages.SUCCESS,
        f"The companion may learn “{key_label(tombstone.key)}” again from what you say. "
        "The erased value does not come back by itself.",
    )
    return back_to(request, default="memory:forgotten")
