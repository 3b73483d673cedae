"""The conversation pages and "your data" (SPEC §7, §9).

Transcripts are read-only: each message carries an anchor (`#m-<id>`, where the memories page
links "from your message on 3 Aug") and the memories it produced, with what became of them.
"Your data" downloads the §9 export file and, behind confirmation pages, forgets everything or
deletes the account."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
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
from config.pages import day, form_errors_from, private_page, when
from conversations.selectors import conversation_for_page, conversations_of
from conversations.services import conversation_delete, user_delete
from memory import services as memory_services
from memory.forgetting import memory_forget_all, withheld_total
from memory.presentation import CERTAINTY, Sentence, Wording, by_scoped_key, standing
from memory.selectors.pages import key_templates
from policy.presentation import capability_name
from support.selectors import reveals_of  # S2: "Support access" on Your data

from .forms import DeleteAccountForm, TimeZoneForm, zone_words
from .portability import user_export
from .selectors import data_counts, replies_used, transcript
from .used import Held, Used, used


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


@dataclass
class Produced:
    id: str
    history: str  # the URL of the memory's history page
    label: str
    value: str | None  # None: forgotten
    status: str
    current: bool
    sentence: Sentence | None = None


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
    used: Used | None = None  # under a companion reply: what its prompt held (SPEC E2)
    not_learned: bool = False  # I8: `learn` was off when this message's turn was made
    withheld: str = ""  # F6: the notice that the companion no longer sees it, and why


@private_page
def conversation_detail_view(request, conversation_id):
    """The transcript, read-only, with the memories each message produced and what became of
    them."""
    user = request.user
    read = transcript(user, conversation_for_page(user, conversation_id))
    conversation, remembered = read.conversation, read.remembered
    speakers = {"user": "You", "assistant": conversation.character.name, "system": "System"}
    by_id = remembered.by_id
    words = Wording(remembered.registry.labels, key_templates())
    states, slots = remembered.states, by_scoped_key(remembered.records)  # E1
    active = {r.id for r in remembered.active}
    root = reverse("memory:list")
    messages_ = []
    for i, seq, role, content, at in read.messages:
        message = TranscriptMessage(
            str(i), seq, role, speakers.get(role, role), content, at, when(at)
        )
        message.blocked = read.blocked.get(message.id, 0)
        message.withheld = withheld_notice(read.withheld.get(message.id, ()), words.label)
        for memory_id in dict.fromkeys(read.produced.get(message.id, ())):
            record = by_id.get(memory_id)
            if record is not None:
                now = standing(record, states, slots[(record.scope_id, record.key)])
                message.produced.append(
                    Produced(
                        memory_id,
                        f"{root}{memory_id}/history",
                        words.label(record.key),
                        record.value,
                        now.words,
                        now.current,
                        words.sentence(record.key, record.value),
                    )
                )
            elif memory_id in read.forgotten:
                key, since = read.forgotten[memory_id]
                message.produced.append(
                    Produced(
                        memory_id,
                        f"{root}{memory_id}/history",
                        words.label(key),
                        None,
                        f"forgotten on {day(since)}",
                        False,
                    )
                )
        messages_.append(message)
    _what_was_used(
        user, conversation, messages_, words, active, root, remembered.registry.many_keys
    )
    return render(
        request,
        "conversations/detail.html",
        {
            "conversation": conversation,
            "messages_": messages_,
            "started": when(conversation.created_at),
        },
    )


def withheld_notice(forgets, label) -> str:
    """F6: which forgets withhold a message, in words (the memory's label and the day, never
    the value); empty for a message the companion still sees."""
    if not forgets:
        return ""
    named = [
        f"“{label(key)}” on {day(at)}"
        + (" (by support, on your behalf)" if by == "support" else "")
        for key, at, by in forgets
    ]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return (
        "The companion no longer sees this message, because it was asked to forget "
        f"{listed}. It stays here for you to read."
    )


def _what_was_used(
    user,
    conversation,
    messages_: list[TranscriptMessage],
    words: Wording,
    active: set[str],
    root: str,
    many_keys: frozenset[str],
) -> None:
    """SPEC E2: under each companion reply, what its stored plan held; I8: the messages a turn
    learned nothing from because `learn` was off."""
    read = replies_used(user, conversation)
    held = {
        i: Held(
            key,
            value,
            day(since) if since is not None else None,
            scope_id,
            version,
            supersedes,
            many=key in many_keys,
        )
        for i, (key, value, since, scope_id, version, supersedes) in read.held.items()
    }
    names = {code: name for code, (name, _) in CERTAINTY.items()}
    for message in messages_:
        message.not_learned = message.id in read.not_learned
        if message.role == "assistant":
            message.used = used(
                read.snapshots.get(message.id),
                held=held,
                label=words.label,
                certainty_names=names,
                capability_name=capability_name,
                card=lambda i: f"{root}?card={i}#m-{i}",
                history=lambda i: f"{root}{i}/history",
                current=active,
                logged=read.logged,
            )


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
    return render(
        request,
        "data/index.html",
        {
            "counts": data_counts(request.user),
            "time_zone_form": TimeZoneForm(initial={"time_zone": zone}),
            "reveals": reveals_of(request.user),
        },
    )


@private_page
@require_POST
def data_time_zone_view(request):
    """The time zone every page shows your times in (blank: the service's)."""
    form = TimeZoneForm(request.POST)
    if form.is_valid():
        try:
            memory_services.profile_set_time_zone(
                user=request.user, time_zone=form.cleaned_data["time_zone"]
            )
        except ValidationError as exc:
            form_errors_from(form, exc)
        else:
            zone = form.cleaned_data["time_zone"]
            messages.success(
                request,
                f"Times are now shown in {zone_words(zone)}."
                if zone
                else f"Times are now shown in the service's time zone, {settings.TIME_ZONE}.",
                extra_tags="at-time-zone",
            )
            return redirect(reverse("data:index") + "#time-zone")
    return render(
        request,
        "data/index.html",
        {
            "counts": data_counts(request.user),
            "time_zone_form": form,
            "reveals": reveals_of(request.user),
        },
    )


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
            n = withheld_total(tombstones)
            seen = (
                f" The companion no longer sees the {n} message{'' if n == 1 else 's'} that held "
                "it."
                if n
                else ""
            )
            messages.success(
                request,
                "Forgot everything the companion remembered about you, everywhere."
                f"{seen} Old messages will not bring it back; your conversations "
                "stay until you delete them.",
            )
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
