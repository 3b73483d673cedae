"""The memory pages (issue 5; SPEC §1–§4): what the companion remembers now, the history of
one slot, what was forgotten, and the actions confirm, correct, retract and forget.

Each action validates a form, calls the service the API calls, adds a message and redirects
(POST-redirect-GET). Reads are bulk, so a page costs the same number of queries for five
memories or five thousand. Messages name the memory by its label, never by its value: a value
does not belong in a cookie or a session."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.db.models import Q
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from config.clock import db_now
from config.errors import Conflict, NotFound, ValidationError
from config.pages import day, form_errors_from, next_url, private_page, when
from conversations.models import Character, Conversation, Message

from . import services
from .domain import (
    REASON_EXPIRED,
    REASON_FORGOTTEN,
    REASON_LOWER_PRECEDENCE,
    REASON_NOT_YET_VALID,
    REASON_SUPERSEDED,
    SCOPE_NARROWNESS,
    USER_AUTHORITIES,
    Context,
    normalise_value,
)
from .domain import MemoryRecord as DomainRecord
from .forms import CorrectForm, ForgetForm, MemoryFilterForm
from .models import MemoryRecord, Tombstone
from .projection import certainty_of
from .resolver import effective_ends, history_order, resolve
from .selectors import (
    Registry,
    history_records,
    memory_get,
    records_to_domain,
    registry,
    tombstones_of,
    user_secret,
)

# Who set a value, in words (issue 5: "you, the companion's inference, a rule").
SET_BY = {
    "user-corrected": "your correction",
    "user-confirmed": "you",
    "rule-extracted": "a rule that read your message",
    "model-inferred": "the companion's inference",
}

# P2 certainty in words, with what it means for the companion.
CERTAINTY = {
    "confirmed": ("Confirmed", "You said so yourself, so it is used as a fact."),
    "likely": ("Likely", "Used in conversations as probably true."),
    "uncertain": ("Uncertain", "Used in conversations, but the companion should check before relying on it."),
    "low-confidence": ("Unsure", "Too unsure to be used in conversations."),
}

# Why a record of a slot is not the current value (resolver reasons, §3), in words.
NOT_CURRENT = {
    REASON_SUPERSEDED: "replaced",
    REASON_LOWER_PRECEDENCE: "not used: what you said takes precedence",
    REASON_NOT_YET_VALID: "starts later",
    REASON_FORGOTTEN: "forgotten",
}


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Shared reads (also used by the conversation pages)


class ScopeNames:
    """Scope ids (SPEC §1) in words ("everywhere", "with Captain Rowan", "only in the
    “greenhouse” scene of …") with every name read in at most two queries: the characters
    named by the scopes or met in the user's conversations, and the conversations named."""

    def __init__(self, user, scope_ids: Iterable[str]):
        slugs: set[str] = set()
        conversation_ids: set[str] = set()
        for scope_id in scope_ids:
            kind, _, rest = scope_id.partition(":")
            if kind == "character":
                slugs.add(rest.rsplit(":", 1)[-1])
            elif kind == "conversation" and _is_uuid(rest):
                conversation_ids.add(rest)
            elif kind == "scene" and _is_uuid(rest.partition(":")[0]):
                conversation_ids.add(rest.partition(":")[0])
        self.characters: dict[str, Character] = {
            c.slug: c
            for c in Character.objects.filter(Q(slug__in=sorted(slugs)) | Q(conversations__user=user)).distinct()
        }
        self.conversations: dict[str, Conversation] = {}
        if conversation_ids:
            rows = Conversation.objects.filter(user=user, pk__in=sorted(conversation_ids)).select_related("character")
            self.conversations = {str(c.pk): c for c in rows}

    def sorted_characters(self) -> list[Character]:
        return sorted(self.characters.values(), key=lambda c: (c.name.casefold(), c.slug))

    def character_name(self, slug: str | None) -> str:
        character = self.characters.get(slug or "")
        return character.name if character else (slug or "a character")

    def conversation_words(self, conversation_id: str) -> str:
        conversation = self.conversations.get(conversation_id)
        if conversation is None:
            return "a conversation that was deleted"
        with_whom = conversation.character.name
        if conversation.title:
            return f"“{conversation.title}” with {with_whom}"
        return f"your conversation with {with_whom} of {day(conversation.created_at)}"

    def words(self, scope_id: str) -> str:
        if scope_id == "*":
            return "everywhere, with every character and in every conversation"
        kind, _, rest = scope_id.partition(":")
        if kind == "user":
            return "everywhere"
        if kind == "character":
            return f"with {self.character_name(rest.rsplit(':', 1)[-1])}"
        if kind == "conversation":
            return f"only in {self.conversation_words(rest)}"
        conversation_id, _, scene = rest.partition(":")
        return f"only in the “{scene}” scene of {self.conversation_words(conversation_id)}"

    def group_of(self, scope_id: str) -> str | None:
        """The character a scope belongs with on the page (None: everywhere)."""
        kind, _, rest = scope_id.partition(":")
        if kind == "character":
            return rest.rsplit(":", 1)[-1]
        if kind in ("conversation", "scene"):
            conversation = self.conversations.get(rest.partition(":")[0])
            return conversation.character.slug if conversation else None
        return None

    def conversation_link(self, scope_id: str) -> str | None:
        kind, _, rest = scope_id.partition(":")
        if kind in ("conversation", "scene") and rest.partition(":")[0] in self.conversations:
            return reverse("conversations:detail", args=[rest.partition(":")[0]])
        return None


@dataclass(frozen=True)
class SourceMessage:
    id: str
    conversation_id: str
    role: str
    created_at: datetime

    @property
    def url(self) -> str:
        return reverse("conversations:detail", args=[self.conversation_id]) + f"#m-{self.id}"


def source_messages(user, ids: Iterable[str]) -> dict[str, SourceMessage]:
    """The messages records came from, for provenance links: one query, no message text."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = Message.objects.filter(user=user, pk__in=wanted).values_list("id", "conversation_id", "role", "created_at")
    return {str(i): SourceMessage(str(i), str(c), role, at) for i, c, role, at in rows}


@dataclass(frozen=True)
class Provenance:
    text: str
    url: str | None = None
    more: str = ""


def _from_message(record: DomainRecord, found: dict[str, SourceMessage]) -> Provenance | None:
    messages_ = [found[s] for s in record.sources if s in found]
    if not messages_:
        return None
    newest = max(messages_, key=lambda m: (m.created_at, m.id))
    who = "your message" if newest.role == "user" else "the companion's message"
    more = f" and {len(messages_) - 1} more" if len(messages_) > 1 else ""
    return Provenance(f"from {who} on {day(newest.created_at)}", newest.url, more)


def original_of(record: DomainRecord, by_id: dict[str, DomainRecord]) -> DomainRecord | None:
    """For a confirmation (same value, no sources of its own): the record it confirmed that
    still has a source message, following the supersedes chain in memory."""
    seen = {record.id}
    current = by_id.get(record.supersedes or "")
    while current is not None and current.id not in seen:
        if current.sources:
            return current
        seen.add(current.id)
        current = by_id.get(current.supersedes or "")
    return None


def provenance(record: DomainRecord, found: dict[str, SourceMessage],
               original: DomainRecord | None = None) -> Provenance:
    """Where a memory came from, in words, linking to the message when there is one."""
    direct = _from_message(record, found)
    if direct is not None:
        return direct
    if record.authority == "user-corrected":
        return Provenance(f"you corrected it on {day(record.recorded_at)}")
    if record.authority == "user-confirmed":
        first = _from_message(original, found) if original is not None else None
        if first is not None:
            return Provenance(f"you confirmed it on {day(record.recorded_at)}; first {first.text}", first.url)
        return Provenance(f"you confirmed it on {day(record.recorded_at)}")
    if record.authority == "model-inferred":
        return Provenance(f"the companion's inference on {day(record.recorded_at)}, not linked to a message")
    return Provenance(f"noted on {day(record.recorded_at)}, not linked to a message")


@dataclass(frozen=True)
class RememberedNow:
    active: list[DomainRecord]
    records: list[DomainRecord]  # every record read (all but forgotten skeletons)
    registry: Registry
    explanations: dict  # record id → R8 explanation

    @property
    def by_id(self) -> dict[str, DomainRecord]:
        return {r.id: r for r in self.records}


def remembered_now(user, now: datetime) -> RememberedNow:
    """What the resolver keeps for this user at `now`, in every scope the user has (SPEC §3),
    with the records read in bulk (records, sources, tombstones, registry, secret).

    One pure resolve per scope: R1 keeps a scope's records for any context that includes that
    scope, and supersession and precedence never cross scopes (a slot lives in one scope), so
    each scope's answer is exactly the resolver's for every context containing it. F5: what
    the page shows is what the resolver keeps — nothing else. Forgotten skeletons are not
    read: R2 excludes them and they supersede nothing (R5 counts only records past R1–R4)."""
    records = records_to_domain(MemoryRecord.objects.filter(user=user).exclude(status="forgotten"), user.username)
    tombstones = tombstones_of(user)
    keys = registry()
    secret = user_secret(user)
    by_scope: dict[str, list[DomainRecord]] = defaultdict(list)
    for record in records:
        by_scope[record.scope_id].append(record)
    active: list[DomainRecord] = []
    explanations: dict = {}
    for scope_id in sorted(by_scope):
        scope = by_scope[scope_id][0].scope
        context = Context(
            user=user.username, character=scope.character, conversation=scope.conversation,
            scene=scope.scene, now=now,
        )
        resolution = resolve(by_scope[scope_id], tombstones, context, many_keys=keys.many_keys, secret=secret)
        active.extend(resolution.active)
        explanations.update(resolution.explanations)
    return RememberedNow(active, records, keys, explanations)


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
    remembered = remembered_now(user, db_now())
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

    cfg = settings.COMPANION
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
        certainty = certainty_of(record, likely=cfg["CERTAINTY_LIKELY"], uncertain=cfg["CERTAINTY_UNCERTAIN"])
        certainty_label, certainty_help = CERTAINTY[certainty]
        groups[group].append(MemoryRow(
            record=record, label=label, scope_words=scope_words, certainty=certainty,
            certainty_label=certainty_label, certainty_help=certainty_help,
            provenance=provenance(record, found, originals.get(record.id)),
            set_by=SET_BY[record.authority], not_in_chats=_not_in_chats(record, certainty),
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


def status_words(record: DomainRecord, reason: str | None) -> str:
    """Why a value of the slot is not the current one, in words (the resolver's reason)."""
    if record.status == "forgotten":
        return "forgotten"
    if reason == REASON_EXPIRED or reason is None:
        return "no longer true" if record.retracted_at is not None else "ended"
    return NOT_CURRENT.get(reason, "not used")


@private_page
def memory_history(request, memory_id):
    """W11: every value of this memory's slot over time, with its window and who set it.
    Forgotten values appear as "forgotten on …", never with their value."""
    user = request.user
    row = memory_get(memory_id, user=user)
    records = history_records(user, row.key, row.scope_id)
    keys = registry([row.key])
    many = keys.is_many(row.key)
    ends = effective_ends(records, many=many)
    now = db_now()
    scope = records[0].scope
    context = Context(user=user.username, character=scope.character, conversation=scope.conversation,
                      scene=scope.scene, now=now)
    resolution = resolve(records, tombstones_of(user, [row.key]), context, many_keys=keys.many_keys,
                         secret=user_secret(user))
    active = {r.id for r in resolution.active}
    found = source_messages(user, [s for r in records for s in r.sources])
    rows = []
    for record in history_order(records):
        forgotten = record.status == "forgotten"
        end = ends.get(record.id)
        explanation = resolution.explain(record.id)
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
            provenance=None if forgotten else _from_message(record, found),
        ))
    live = [r for r in rows if r.current]
    names = ScopeNames(user, [row.scope_id])
    return render(request, "memory/history.html", {
        "label": keys.label(row.key), "key": row.key, "many": many, "rows": rows,
        "scope_words": names.words(row.scope_id), "current": live,
    })


@private_page
def forgotten_list(request):
    """F1/F4: what was forgotten — the slot and scope, never the value — and a way to let
    the companion learn it again."""
    user = request.user
    tombstones = list(
        Tombstone.objects.filter(user=user).order_by("-forgotten_at", "id")
        .values_list("id", "scope_id", "key", "value_hash", "forgotten_at")
    )
    keys = registry()
    names = ScopeNames(user, {t[1] for t in tombstones})
    root = reverse("memory:forgotten")
    rows = [
        {
            "id": str(tid), "learn_again": f"{root}{tid}/learn-again", "label": keys.label(key), "key": key, "scope_words": names.words(scope_id),
            "one_value": bool(hashed), "many": keys.is_many(key), "forgotten_on": when(at),
        }
        for tid, scope_id, key, hashed, at in tombstones
    ]
    return render(request, "memory/forgotten.html", {"rows": rows})


@private_page
@require_POST
def tombstone_delete(request, tombstone_id):
    """F4: "let it learn this again". The erased value does not come back."""
    key = Tombstone.objects.filter(user=request.user, pk=tombstone_id).values_list("key", flat=True).first()
    if key is None:
        raise NotFound("No such forgotten memory.")
    services.tombstone_delete(tombstone_id=tombstone_id, user=request.user)
    messages.success(request, f"The companion may learn “{_label(key)}” again from what you say. "
                              "The erased value does not come back by itself.")
    return redirect(next_url(request, "memory:forgotten"))
