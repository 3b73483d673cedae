"""The conversation pages and "your data" (SPEC §7, §9).

Transcripts are read-only: each message carries an anchor (`#m-<id>`, where the memories page
links "from your message on 3 Aug") and the memories it produced, with what became of them.
"Your data" downloads the §9 export file and, behind confirmation pages, forgets everything or
deletes the account."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth import logout
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from config.errors import ValidationError
from config.pages import form_errors_from, private_page
from conversations.selectors import conversation_for_page, conversations_of
from conversations.services import conversation_delete, user_delete
from memory import services as memory_services
from memory.forgetting import memory_forget_all

from .data_page import data_page, forgot_everything_words, time_zone_words
from .forms import DeleteAccountForm, TimeZoneForm
from .portability import user_export
from .transcript_page import transcript_page


@private_page
def conversation_list_view(request):
    return render(
        request,
        "conversations/list.html",
        {
            "conversations": conversations_of(request.user),
            "root": reverse("conversations:list"),
        },
    )


@private_page
def conversation_detail_view(request, conversation_id):
    """The transcript, read-only, with the memories each message produced and what became of
    them (`turns.transcript_page`)."""
    user = request.user
    conversation = conversation_for_page(user, conversation_id)
    return render(request, "conversations/detail.html", transcript_page(user, conversation))


@private_page
def conversation_delete_view(request, conversation_id):
    """SPEC §7: deleting a conversation deletes its messages and turns; memories keep their
    evidence time but lose these messages as sources. A confirmation page first."""
    conversation = conversation_for_page(request.user, conversation_id)
    if request.method == "POST":
        conversation_delete(conversation_id=conversation.pk, user=request.user)
        messages.success(
            request,
            f"Deleted the conversation with {conversation.character.name} and all its messages.",
        )
        return redirect("conversations:list")
    return render(
        request,
        "conversations/delete.html",
        {
            "conversation": conversation,
            "n_messages": conversation.messages.count(),
        },
    )


# ---------------------------------------------------------------------------------------------
# Your data (SPEC §9)


@private_page
def data_index_view(request):
    zone = (
        timezone.get_current_timezone_name() if getattr(request, "time_zone_chosen", False) else ""
    )
    form = TimeZoneForm(initial={"time_zone": zone})
    return render(request, "data/index.html", data_page(request.user, form))


@private_page
@require_POST
def data_time_zone_view(request):
    """The time zone every page shows your times in (blank: the service's)."""
    form = TimeZoneForm(request.POST)
    if form.is_valid():
        zone = form.cleaned_data["time_zone"]
        try:
            memory_services.profile_set_time_zone(user=request.user, time_zone=zone)
        except ValidationError as exc:
            form_errors_from(form, exc)
        else:
            messages.success(request, time_zone_words(zone), extra_tags="at-time-zone")
            return redirect(reverse("data:index") + "#time-zone")
    return render(request, "data/index.html", data_page(request.user, form))


@private_page
def data_export_view(request):
    """Everything of yours as the JSON export file of SPEC §9 (the same as
    `GET /users/{user}/export`)."""
    exported = user_export(user=request.user)
    body = json.dumps(exported, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    name = slugify(request.user.username) or "you"
    response["Content-Disposition"] = f'attachment; filename="companion-data-{name}.json"'
    return response


@private_page
def forget_everything_view(request):
    """F1 with scope `*` for every key you have: nothing remembered stays, and old messages
    will not bring it back. Conversations stay until you delete them."""
    if request.method == "POST":
        tombstones = memory_forget_all(user=request.user)
        if tombstones:
            messages.success(request, forgot_everything_words(tombstones))
        else:
            messages.info(request, "There was nothing to forget.")
        return redirect("memory:list")
    return render(request, "data/forget_everything.html")


@private_page
def delete_account_view(request):
    """DELETE /users/{user} from the page: everything of yours is erased, then you are
    signed out."""
    user = request.user
    if request.method == "POST":
        form = DeleteAccountForm(request.POST, username=user.get_username())
        if form.is_valid():
            user_delete(user=user)
            logout(request)
            messages.success(request, "Your account and everything in it were deleted.")
            return redirect("login")
    else:
        form = DeleteAccountForm(username=user.get_username())
    return render(request, "data/delete_account.html", {"form": form})
