"""The memory pages about the past (SPEC §4, W11, F1–F4): forgetting one memory or a
selection, a memory's history over time, and what was forgotten with the way to let the
companion learn it again. Each action lands back on the card or list it came from."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import Conflict
from config.pages import next_url, private_page

from . import forget_pages, forgetting, notices
from .forms import ForgetForm
from .history_page import history_page
from .presentation import plain_label
from .selectors.records import memory_get, registry
from .selectors.resolution import remembered_now
from .views import key_label, told

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
    posted = request.method == "POST"
    form = ForgetForm(request.POST, many=many) if posted else ForgetForm(many=many)
    if posted and form.is_valid():
        everywhere = form.cleaned_data["everywhere"]
        try:
            tombstone = forgetting.memory_forget(
                record_id=row.pk,
                user=user,
                everywhere=everywhere,
                whole_key=bool(form.cleaned_data.get("whole_key")),
            )
        except Conflict:
            return told(request, notices.already_forgotten(label))
        return told(request, notices.forgotten(user, row, label, everywhere, tombstone))
    page = forget_pages.forget_confirm_page(user, row, label, many, form, next_url(request))
    return render(request, "memory/forget.html", page)


@private_page
@require_POST
def memory_forget_selected_view(request):
    """Forget several at once: the first post (the ticked cards) shows one confirmation page
    listing what will be forgotten; posting that page forgets them. Only what is remembered
    now can be chosen: anything else that was posted (an old card, another user's id, not an
    id at all) is left out and said so."""
    user = request.user
    remembered = remembered_now(user)
    chosen, skipped = forget_pages.chosen_of(remembered, request.POST.getlist("selected"))
    if not chosen:
        return told(request, notices.nothing_chosen())
    if request.POST.get("confirm"):
        tombstones = forgetting.memory_forget_selected(record_ids=[r.id for r in chosen], user=user)
        return told(request, forget_pages.forgotten_selected(remembered, chosen, tombstones))
    page = forget_pages.forget_selected_page(user, remembered, chosen)
    return render(
        request,
        "memory/forget_selected.html",
        {"page": page, "skipped": skipped, "next": next_url(request)},
    )


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
    again (`memory.forget_pages`)."""
    return render(request, "memory/forgotten.html", forget_pages.forgotten_page(request.user))


@private_page
@require_POST
def tombstone_delete_view(request, tombstone_id):
    """F4: "let it learn this again". The erased value does not come back."""
    tombstone = forgetting.tombstone_delete(tombstone_id=tombstone_id, user=request.user)
    return told(request, notices.learn_again(key_label(tombstone.key)), "memory:forgotten")
