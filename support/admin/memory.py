"""Memory in the admin, for support staff: the records with their E1 state, the user's memory
settings, slot retractions and idempotency records.

Records, slot retractions and idempotency records are read-only: the services are their only
writers (DESIGN habit 2). Support changes memory only through the actions below (forget on the
user's behalf, retract, normalise statuses), each asking for a reason that `support.services`
logs. Values and a key's free part are private text: they show only inside a reveal of their
user (SPEC §13 S1), and each page that shows them is logged. `MemoryProfile` is shown as the
user's memory settings — the I8 switches with who changed them and when, and the time zone —
read-only, and never its secret (the key of the value hashes).
"""

from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.db.models import Count, Exists, OuterRef, Q
from django.utils.html import format_html, format_html_join

from config.clock import db_now
from conversations.models import Conversation, Message, Turn
from memory.domain import STATES
from memory.forgetting import forget_preview
from memory.models import (
    IdempotencyRecord,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    MemoryWithholding,
    SlotRetraction,
    Tombstone,
)
from memory.presentation import STATE_WORDS
from memory.selectors.states import memory_states_of
from support import services as support
from support.admin.base import (
    SupportAdmin,
    count_column,
    count_of,
    private_key_column,
    set_or_not_filter,
    support_action,
)
from support.display import admin_link, explain_turn_url, explain_url
from support.forms import ForgetForm
from support.words import when

WITHHELD = (
    "A forget withholds this memory (F7.2): it holds a forgotten value, so the companion no "
    "longer uses it in the forget's scope. It stays the user's."
)
# A memory record on a support action's page, as `MemoryRecordAdmin._on_records` writes it.
RECORD_COLUMNS = ["record", "user", "key", "scope", "state", "authority", "value"]


def _state_now(request):
    """The request's time for E1 states: the database clock, read once per request (§0)."""
    now = getattr(request, "_memory_state_now", None)
    if now is None:
        now = request._memory_state_now = db_now()
    return now


class StateFilter(admin.SimpleListFilter):
    """SPEC E1: the records in a state now — each record's resolution in its own scope, the
    same as `GET /memories?state=` answers (never the stored status, which W12 may leave
    behind). Each choice is labelled once, with the state as the list's state column and the
    API name it. Its counts, with facets on, are computed from one resolution of the list."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [(state, state) for state in STATES]

    def _states(self, queryset) -> dict:
        return memory_states_of(queryset, now=_state_now(self.request))

    def queryset(self, request, queryset):
        if self.value() not in STATES:
            return queryset
        found = self._states(queryset)
        return queryset.filter(pk__in=[i for i, s in found.items() if s.state == self.value()])

    def get_facet_counts(self, pk_attname, filtered_qs):
        found = self._states(filtered_qs)
        counts = {}
        for i, (state, _) in enumerate(self.lookup_choices):
            ids = [k for k, s in found.items() if s.state == state]
            counts[f"{i}__c"] = Count(pk_attname, filter=Q(pk__in=ids))
        return counts


RetractedFilter = set_or_not_filter(
    "retracted", "retracted_at", {"yes": ("retracted (W10)", False), "no": ("not retracted", True)}
)


@admin.register(MemoryRecord)
class MemoryRecordAdmin(SupportAdmin):
    read_only = True
    private_fields = ("value",)
    private_key_fields = ("key",)
    uuid_search_fields = ("id", "supersedes_id", "conversation_id")
    list_display = (
        "key_ref",
        "user_ref",
        "value_preview",
        "scope_id",
        "state_ref",
        "authority",
        "version",
        "valid_from",
        "valid_until",
        "n_sources",
        "explain",
    )
    list_filter = (StateFilter, "authority", "scope_kind", RetractedFilter)
    search_fields = ("user__username",)  # and the key, without its free part (SupportAdmin)
    search_help_text = "A username or key (part of it), or a record, conversation or superseded id."
    list_select_related = ("user",)
    date_hierarchy = "recorded_at"
    actions = ("forget_on_behalf", "retract", "normalise_statuses")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "user_ref",
                    "key_ref",
                    "value_full",
                    "scope_ref",
                    "state_ref",
                    "state_detail_ref",
                    "withheld_by_refs",
                    "authority",
                    "confidence",
                )
            },
        ),
        (
            "Time",
            {
                "fields": (
                    "valid_from",
                    "valid_until",
                    "retracted_at",
                    "recorded_at",
                    "evidence_time",
                )
            },
        ),
        (
            "History and provenance",
            {
                "fields": (
                    "version",
                    "supersedes_ref",
                    "superseded_by_refs",
                    "source_refs",
                    "tombstone_refs",
                    "explain_link",
                )
            },
        ),
    )
    readonly_fields = tuple(flatten_fieldsets(fieldsets))

    def annotations(self):
        return {
            "_sources": count_of(MemorySource, "memory"),
            "_withheld": Exists(MemoryWithholding.objects.filter(memory=OuterRef("pk"))),
        }

    def get_ordering(self, request):
        return ("user__username", "_shown_key", "scope_id", "version")  # never by a hidden name

    def object_label(self, obj):
        return f"{getattr(obj, '_shown_key', '') or 'memory'} v{obj.version}"

    key_ref = private_key_column()

    # --- E1: the state now, never the stored status -------------------------------------------

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        changelist = (getattr(response, "context_data", None) or {}).get("cl")
        if changelist is not None:
            self._attach_states(request, list(changelist.result_list))
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        obj = (getattr(response, "context_data", None) or {}).get("original")
        if obj is not None:
            self._attach_states(request, [obj])
        return response

    def _attach_states(self, request, records) -> None:
        """The E1 state of each shown record (one resolution of their scoped keys)."""
        if not records:
            return
        found = memory_states_of(
            MemoryRecord.objects.filter(pk__in=[r.pk for r in records]), now=_state_now(request)
        )
        for record in records:
            record._e1_state = found.get(str(record.pk))

    def _state_of(self, obj):
        state = getattr(obj, "_e1_state", None)
        if state is None:  # an object drawn outside the list and change pages
            state = memory_states_of(MemoryRecord.objects.filter(pk=obj.pk), now=db_now()).get(
                str(obj.pk)
            )
            obj._e1_state = state
        return state

    @admin.display(description="state")
    def state_ref(self, obj):
        state = self._state_of(obj)
        if state is None:
            return "-"
        shown = format_html(
            '<span class="memory-state" data-state="{}" title="{}">{}</span>',
            state.state,
            STATE_WORDS[state.state],
            state.state,
        )
        # F7.2: a withheld record says so beside its state (one column: the list fits 1280px).
        withheld = self.withheld_ref(obj)
        return shown if withheld == "-" else format_html("{} {}", shown, withheld)

    @admin.display(description="why (R8)")
    def state_detail_ref(self, obj):
        state = self._state_of(obj)
        if state is None or state.rule is None:
            return "the current value of its slot in its own scope"
        parts = [state.rule]
        if state.by:
            parts.append(format_html("by {}", admin_link(MemoryRecord, state.by)))
        if state.since:
            parts.append(f"since {when(state.since)}")
        return format_html_join(" · ", "{}", ((part,) for part in parts))

    # --- F7.2: withheld by a forget ---------------------------------------------------------

    @admin.display(description="withheld", ordering="_withheld")
    def withheld_ref(self, obj):
        """F7.2: "withheld" when a forget withholds the record — it stays the user's, masked
        like every value outside a reveal (S1), but the companion no longer uses it."""
        if not getattr(obj, "_withheld", False):
            return "-"
        return format_html('<span class="memory-withheld" title="{}">withheld</span>', WITHHELD)

    @admin.display(description="withheld")
    def withheld_by_refs(self, obj):
        """F7.2: "withheld" with the forgets that withhold the record, by tombstone — never a
        value."""
        rows = (
            MemoryWithholding.objects.filter(memory=obj)
            .order_by("tombstone__forgotten_at", "tombstone_id")
            .values_list("tombstone_id", "tombstone__forgotten_at")
        )
        forgets = format_html_join(
            ", ",
            "{} (forgotten {})",
            ((admin_link(Tombstone, pk), when(at)) for pk, at in rows),
        )
        if not forgets:
            return "-"
        return format_html(
            '<span class="memory-withheld" title="{}">withheld</span> by {}', WITHHELD, forgets
        )

    @admin.display(description="value", ordering="_preview_value")
    def value_preview(self, obj):
        if obj.status == "forgotten":
            return format_html("<em>{}</em>", "erased (forgotten)")
        return self.private_text(obj, "value")

    @admin.display(description="value")
    def value_full(self, obj):
        if obj.status == "forgotten":
            return format_html("<em>{}</em>", "erased (forgotten, F2)")
        return self.private_text(obj, "value", full=True)

    n_sources = count_column("_sources", "sources")

    @admin.display(description="scope")
    def scope_ref(self, obj):
        if obj.conversation_id:
            return format_html(
                "{} ({})",
                obj.scope_id,
                admin_link(Conversation, obj.conversation_id, "conversation"),
            )
        return obj.scope_id

    @admin.display(description="supersedes")
    def supersedes_ref(self, obj):
        return admin_link(MemoryRecord, obj.supersedes_id)

    @admin.display(description="superseded by")
    def superseded_by_refs(self, obj):
        ids = MemoryRecord.objects.filter(user_id=obj.user_id, supersedes_id=obj.pk).values_list(
            "pk", flat=True
        )
        return format_html_join(", ", "{}", ((admin_link(MemoryRecord, pk),) for pk in ids)) or "-"

    @admin.display(description="source messages")
    def source_refs(self, obj):
        rows = MemorySource.objects.filter(memory=obj).values_list(
            "message_id", "message__seq", "message__conversation_id"
        )
        return (
            format_html_join(
                ", ",
                "{} (#{} in {})",
                ((admin_link(Message, mid, mid), seq, conv) for mid, seq, conv in rows),
            )
            or "-"
        )

    @admin.display(description="tombstones of this key")
    def tombstone_refs(self, obj):
        rows = Tombstone.objects.filter(user_id=obj.user_id, key=obj.key).values_list(
            "pk", "scope_id", "forgotten_at"
        )
        return (
            format_html_join(
                ", ",
                "{} ({}, {})",
                ((admin_link(Tombstone, pk), scope, at.isoformat()) for pk, scope, at in rows),
            )
            or "-"
        )

    def _explain_url(self, obj) -> str:
        """The explain view for this record's key in its own scope (its conversation and
        scene when it has them), now. The link names the record, never the key (whose free part
        is private text)."""
        params = {"user": obj.user.get_username(), "memory": str(obj.pk)}
        if obj.scope_kind == "character":
            params["character"] = obj.scope_id.rsplit(":", 1)[1]
        if obj.conversation_id:
            params["conversation"] = str(obj.conversation_id)
        if obj.scene:
            params["scene"] = obj.scene
        return explain_url(**params)

    @admin.display(description="explain")
    def explain(self, obj):
        return format_html(
            '<a href="{}" class="explain-memory">Explain</a>', self._explain_url(obj)
        )

    @admin.display(description="explain")
    def explain_link(self, obj):
        """Now, in the record's scope; and as at each turn that taught it (its source messages'
        turns: their conversation, scene and plan time)."""
        links = [
            format_html(
                '<a href="{}">Explain this key in its scope now</a>', self._explain_url(obj)
            )
        ]
        sources = MemorySource.objects.filter(memory=obj).values_list("message_id", flat=True)
        turns = Turn.objects.filter(user_id=obj.user_id, user_message_id__in=sources).order_by(
            "created_at"
        )
        for turn_id, turn_key in turns.values_list("pk", "turn_key"):
            links.append(
                format_html(
                    '<a href="{}" class="explain-turn">Explain turn {} that taught it</a>',
                    explain_turn_url(turn_id),
                    turn_key,
                )
            )
        return format_html_join(" · ", "{}", ((link,) for link in links))

    # --- actions ------------------------------------------------------------------------------

    def _on_records(self, request, queryset, *, service, options=(), more=None, **page):
        """A support action on the selected records: their rows on its page (`RECORD_COLUMNS`,
        then `more(record)`'s cells), then `service` on them with the reason and the form's
        `options`. The page may show the records' text (a logged page, S1)."""
        records = list(queryset.select_related("user"))
        self._attach_states(request, records)
        rows = [
            [
                admin_link(MemoryRecord, r.pk),
                r.user.get_username(),
                self.key_ref(r),
                r.scope_id,
                self.state_ref(r),
                r.authority,
                self.value_preview(r),
                *(more(r) if more else ()),
            ]
            for r in records
        ]
        return support_action(
            self,
            request,
            queryset,
            rows=rows,
            revealed=records,
            perform=lambda data: service(
                staff=request.user,
                record_ids=[r.pk for r in records],
                reason=data["reason"],
                **{name: data[name] for name in options},
            ),
            **page,
        )

    @staticmethod
    def _forget_counts(record) -> list:
        """F7.3 (S1): what forgetting `record` would stop the companion using, in counts only:
        the messages (in its scope · everywhere, F6) and the other memories (in its scope,
        F7.2). A forgotten record has nothing left to forget."""
        if record.status == "forgotten":
            return ["-", "-"]
        preview = forget_preview(record_id=record.pk, user=record.user)
        return [
            f"{preview.withheld} · {preview.withheld_everywhere}",
            len(preview.withheld_memories),
        ]

    @admin.action(description="Forget on the user's behalf…", permissions=["forget_memory"])
    def forget_on_behalf(self, request, queryset):
        return self._on_records(
            request,
            queryset,
            service=support.support_forget,
            options=("everywhere", "whole_key"),
            more=self._forget_counts,
            form_class=ForgetForm,
            title="Forget on the user's behalf",
            intro="Each selected memory's slot is forgotten through the forget service (SPEC "
            "F1–F3): "
            "a tombstone that never holds the value, every covered record purged to a skeleton "
            "with its value erased, and the same value blocked from coming back from older "
            "evidence. For a multi-valued key only that value is forgotten unless you tick "
            "“every value of the key”. The user can undo the tombstone; erased values do not come "
            "back. The last two columns say what the companion would stop using: the messages "
            "that hold the value (forgetting in the memory's scope · everywhere, F6) and the "
            "user's other memories that hold it (in its scope, F7.2) — counts only.",
            columns=[
                *RECORD_COLUMNS,
                "messages withheld (scope · everywhere)",
                "other memories withheld",
            ],
        )

    @admin.action(
        description="Retract (the slot is no longer true)…", permissions=["retract_memory"]
    )
    def retract(self, request, queryset):
        return self._on_records(
            request,
            queryset,
            service=support.support_retract,
            title="Retract",
            intro="Each selected memory's slot is retracted through the retract service (SPEC "
            "W10): "
            "every record of the slot that has not ended is closed now; history keeps them, and "
            "older evidence cannot bring the value back (W4). Nothing is erased.",
            columns=RECORD_COLUMNS,
        )

    @admin.action(
        description="Normalise statuses of these users…", permissions=["normalise_memory"]
    )
    def normalise_statuses(self, request, queryset):
        from django.contrib.auth import get_user_model

        user_ids = sorted(set(queryset.values_list("user_id", flat=True)))
        users = get_user_model().objects.filter(pk__in=user_ids).order_by("username")
        return support_action(
            self,
            request,
            queryset,
            title="Normalise statuses",
            intro="Writes the stored statuses (expired, superseded) of every memory of these users "
            "through the normalisation service (SPEC W12). It is idempotent, safe at any time, "
            "and never changes what the resolver decides; the management command "
            "`normalise_statuses` does the same for everyone.",
            columns=["user", "memories"],
            rows=[[u.get_username(), MemoryRecord.objects.filter(user=u).count()] for u in users],
            perform=lambda data: support.support_normalise(
                staff=request.user,
                user_ids=user_ids,
                reason=data["reason"],
            ),
        )


@admin.register(MemoryProfile)
class MemorySettingsAdmin(SupportAdmin):
    """I8: whether the companion learns from a user's messages and uses their memories in
    conversations, who changed that last (the user on the pages, the API, support) and when.
    The switches change only through `memory_settings_set` (the pages and the API); the
    profile's secret is never shown."""

    read_only = True
    list_display = (
        "user_ref",
        "learn",
        "use",
        "settings_changed_by",
        "settings_changed_at",
        "time_zone",
    )
    list_filter = ("learn", "use", "settings_changed_by")
    search_fields = ("user__username",)
    list_select_related = ("user",)
    fields = ("user_ref", "learn", "use", "settings_changed_by", "settings_changed_at", "time_zone")


class SlotAdmin(SupportAdmin):
    """Rows that name a memory slot — a key in a scope, and one value of it by its keyed hash or
    the whole key — and never a value: slot retractions and tombstones. Read-only; the key's
    free part is private text (S1), so a row is named by its key as this request may see it."""

    read_only = True
    private_key_fields = ("key",)
    search_fields = ("user__username",)  # and the key, without its free part (SupportAdmin)
    list_select_related = ("user",)
    row_label = ""  # what a row is, as its model's `__str__` says: "forgotten", "retraction of"

    key_ref = private_key_column()

    def object_label(self, obj):
        return f"{self.row_label} {getattr(obj, '_shown_key', '')} ({obj.scope_id})"

    @admin.display(description="one value only", boolean=True)
    def value_level(self, obj):
        return bool(obj.value_hash)


@admin.register(SlotRetraction)
class SlotRetractionAdmin(SlotAdmin):
    row_label = "retraction of"
    list_display = ("key_ref", "user_ref", "scope_id", "value_level", "retracted_at")
    date_hierarchy = "retracted_at"
    fields = ("user_ref", "key_ref", "scope_id", "value_level", "retracted_at")

    def get_ordering(self, request):
        return ("user__username", "_shown_key", "scope_id")  # never by a hidden name


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(SupportAdmin):
    """W2: the key, the outcome and the record; the payload is kept only as an HMAC (not shown)."""

    read_only = True
    list_display = ("key", "user_ref", "outcome", "reason", "record_ref", "created_at")
    list_filter = ("outcome", "reason")
    search_fields = ("user__username", "key")
    uuid_search_fields = ("record_id",)
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    fields = ("user_ref", "key", "outcome", "reason", "record_ref", "created_at")

    @admin.display(description="record")
    def record_ref(self, obj):
        return admin_link(MemoryRecord, obj.record_id)
