"""The conversation pages and "your data" (issue 5; SPEC §7, §9).

Transcripts are read-only: each message carries an anchor (`#m-<id>`, where the memories page
links "from your message on 3 Aug") and the memories it produced, with what became of them.
"Your data" downloads the §9 snapshot and, behind confirmation pages, forgets everything or
deletes the account."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib import messages
from django.contrib.auth import logout
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify

from config.clock import db_now
from config.errors import NotFound
from config.pages import day, private_page, when

from .forms import DeleteAccountForm
from .models import Conversation, Message, Turn


def _conversation_of(user, conversation_id) -> Conversation:
    conversation = Conversation.objects.select_related("character").filter(user=user, pk=conversation_id).first()
    if conversation is None:
        raise NotFound("No such conversation.")
    return conversation


@private_page
def conversation_list(request):
    conversations = (
        Conversation.objects.filter(user=request.user).select_related("character")
        .annotate(n_messages=Count("messages")).order_by("-created_at", "id")
    )
    return render(request, "conversations/list.html", {
        "conversations": conversations, "root": reverse("conversations:list"),
    })


@dataclass
class Produced:
    id: str
    history: str  # the URL of the memory's history page
    label: str
    value: str | None  # None: forgotten
    status: str
    current: bool


@dataclass
class TranscriptMessage:
    id: str
    seq: int
    role: str
    speaker: str
    content: str
    created_at: datetime
    when: str
    produced: list[Produced] = field(default_factory=list)
    blocked: int = 0


@private_page
def conversation_detail(request, conversation_id):
    """The transcript, read-only, with the memories each message produced. Queries: the
    conversation, its messages, the provenance links, the turns' extraction outcomes, one bulk
    resolve of the user's memories, and the forgotten skeletons among what was produced."""
    from memory.models import MemoryRecord, MemorySource
    from memory.views import remembered_now, status_words

    user = request.user
    conversation = _conversation_of(user, conversation_id)
    rows = Message.objects.filter(user=user, conversation=conversation).order_by("seq")
    speakers = {"user": "You", "assistant": conversation.character.name, "system": "System"}
    transcript = [
        TranscriptMessage(str(i), seq, role, speakers.get(role, role), content, at, when(at))
        for i, seq, role, content, at in rows.values_list("id", "seq", "role", "content", "created_at")
    ]
    produced_ids: dict[str, list[str]] = defaultdict(list)
    links = MemorySource.objects.filter(memory__user=user, message__conversation=conversation)
    for message_id, memory_id in links.values_list("message_id", "memory_id"):
        produced_ids[str(message_id)].append(str(memory_id))
    blocked: dict[str, int] = defaultdict(int)
    for message_id, extracted in Turn.objects.filter(user=user, conversation=conversation).values_list(
        "user_message_id", "extracted"
    ):
        for item in extracted or []:
            if item.get("memory"):
                produced_ids[str(message_id)].append(str(item["memory"]))
            elif item.get("outcome") == "blocked":
                blocked[str(message_id)] += 1

    remembered = remembered_now(user, db_now())
    by_id, keys = remembered.by_id, remembered.registry
    active = {r.id for r in remembered.active}
    wanted = {i for ids in produced_ids.values() for i in ids}
    forgotten = {}
    missing = sorted(wanted - set(by_id))
    if missing:
        forgotten = {
            str(i): (key, since)
            for i, key, since in MemoryRecord.objects.filter(user=user, pk__in=missing, status="forgotten")
            .values_list("id", "key", "status_since")
        }
    root = reverse("memory:list")
    for message in transcript:
        message.blocked = blocked.get(message.id, 0)
        for memory_id in dict.fromkeys(produced_ids.get(message.id, ())):
            record = by_id.get(memory_id)
            if record is not None:
                explanation = remembered.explanations.get(memory_id)
                current = memory_id in active
                status = "remembered now" if current else status_words(record, explanation.reason if explanation else None)
                message.produced.append(Produced(memory_id, f"{root}{memory_id}/history", keys.label(record.key), record.value,
                                                 status, current))
            elif memory_id in forgotten:
                key, since = forgotten[memory_id]
                message.produced.append(Produced(memory_id, f"{root}{memory_id}/history", keys.label(key), None,
                                                 f"forgotten on {day(since)}", False))
    return render(request, "conversations/detail.html", {
        "conversation": conversation, "messages_": transcript, "started": when(conversation.created_at),
    })


@private_page
def conversation_delete_view(request, conversation_id):
    """SPEC §7: deleting a conversation deletes its messages and turns; memories keep their
    evidence time but lose these messages as sources. A confirmation page first."""
    from .services import conversation_delete

    conversation = _conversation_of(request.user, conversation_id)
    if request.method == "POST":
        conversation_delete(conversation_id=conversation.pk, user=request.user)
        messages.success(request, f"Deleted the conversation with {conversation.character.name} and all its messages.")
        return redirect("conversations:list")
    return render(request, "conversations/delete.html", {
        "conversation": conversation, "n_messages": conversation.messages.count(),
    })


# ---------------------------------------------------------------------------------------------
# Your data (SPEC §9)


@private_page
def data_index(request):
    from memory.models import MemoryRecord, Tombstone
    from policy.models import PolicyRule

    user = request.user
    counts = {
        "conversations": Conversation.objects.filter(user=user).count(),
        "messages": Message.objects.filter(user=user).count(),
        "memories": MemoryRecord.objects.filter(user=user).exclude(status="forgotten").count(),
        "forgotten": Tombstone.objects.filter(user=user).count(),
        "rules": PolicyRule.objects.filter(user=user, revoked_at__isnull=True).count(),
    }
    return render(request, "data/index.html", {"counts": counts})


@private_page
def data_export(request):
    """Everything of yours as the JSON snapshot of SPEC §9 (the same as `GET /users/{user}/export`)."""
    try:
        from conversations.portability import user_export
    except ImportError:
        messages.error(request, "Downloading your data is not available yet. Please try again later.")
        return redirect("data:index")
    snapshot = user_export(user=request.user)
    body = json.dumps(snapshot, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    name = slugify(request.user.username) or "you"
    response["Content-Disposition"] = f'attachment; filename="companion-data-{name}.json"'
    return response


@private_page
def forget_everything(request):
    """F1 with scope `*` for every key you have: nothing remembered stays, and old messages
    will not bring it back. Conversations stay until you delete them."""
    from memory.services import memory_forget_all

    if request.method == "POST":
        tombstones = memory_forget_all(user=request.user)
        if tombstones:
            messages.success(request, f"Forgot everything: {len(tombstones)} kinds of memory, everywhere. "
                                      "Old messages will not bring them back.")
        else:
            messages.info(request, "There was nothing to forget.")
        return redirect("memory:list")
    return render(request, "data/forget_everything.html")


@private_page
def delete_account(request):
    """DELETE /users/{user} from the page: everything of yours is erased, then you are
    signed out."""
    from .services import user_delete

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

