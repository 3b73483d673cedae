"""The admin's support machinery (issue 6), shared by every app's `admin.py`.

`SupportAdmin` is the base class of every ModelAdmin in the project:

- **Private text is masked by default.** A model's `private_fields` (memory values, message
  content, conversation titles) are deferred in every admin queryset, so without
  `config.view_private_text` the text never even leaves the database; pages show "hidden".
  With the permission, changelists show a short preview and change pages the whole text, and
  each object shown unmasked is written to the access log (`PrivateTextAccess`) — one insert
  per page, so query counts stay constant.
- **No oracle.** Without the permission the private fields are not searchable, not sortable and
  not filterable (`?value__startswith=` is refused like any other disallowed lookup), and no
  page prints an object's `__str__` where that could hold private text (a conversation's title):
  `object_label` replaces it in titles, breadcrumbs and the history page.
- **Writes go through the services.** `read_only` admins (everything the services own) allow
  no add, change or delete; the support actions (`support_action`) ask for a reason on an
  intermediate page and call `config.support`, which calls the services and logs the reason.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce, Substr
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from . import support
from .errors import ValidationError as DomainValidationError

MASK = "hidden"
MASK_TITLE = "Private text: needs the view_private_text permission (every view is logged)."
# Lookup parts that reach private text, from any model: refused without the permission.
PRIVATE_LOOKUP_PARTS = frozenset({"value", "content", "title"})


def masked():
    return format_html('<span class="private-masked" title="{}">{}</span>', MASK_TITLE, MASK)


def count_of(model, fk: str, **filters):
    """A correlated COUNT subquery: per-row counts in the changelist's one query, without the
    GROUP BY a `Count()` join would add to every other column."""
    rows = (
        model.objects.filter(**{fk: OuterRef("pk")}, **filters)
        .order_by().values(fk).annotate(n=Count("*")).values("n")
    )
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def admin_link(obj_or_model, pk, text=None):
    """A link to an object's change page (by id, without loading it)."""
    if pk is None:
        return "-"
    opts = obj_or_model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, text if text is not None else pk)


@dataclass(frozen=True)
class _Labelled:
    """Stands in for an object on the history page: its pk, and a text-free label."""

    pk: object
    label: str

    def __str__(self) -> str:
        return self.label


class SupportAdmin(admin.ModelAdmin):
    private_fields: tuple[str, ...] = ()  # text columns masked without the permission
    private_search_fields: tuple[str, ...] = ()  # searched only with the permission
    uuid_search_fields: tuple[str, ...] = ()  # a search term that is a UUID matches these exactly
    read_only = False  # the services own these rows: no add, change or delete here
    subject_field = "user_id"  # whose private text it is, for the access log
    preview_chars = 80
    change_form_template = "admin/support/change_form.html"

    # --- permissions -----------------------------------------------------------------------

    def has_add_permission(self, request, *args):
        return False if self.read_only else super().has_add_permission(request, *args)

    def has_change_permission(self, request, obj=None):
        return False if self.read_only else super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False if self.read_only else super().has_delete_permission(request, obj)

    def has_forget_memory_permission(self, request):
        return request.user.has_perm(support.ACTION_PERMISSIONS["forget"])

    def has_retract_memory_permission(self, request):
        return request.user.has_perm(support.ACTION_PERMISSIONS["retract"])

    def has_normalise_memory_permission(self, request):
        return request.user.has_perm(support.ACTION_PERMISSIONS["normalise"])

    def has_revoke_rule_permission(self, request):
        return request.user.has_perm(support.ACTION_PERMISSIONS["revoke-rule"])

    def private_allowed(self, request) -> bool:
        if request is None:
            return False
        cached = getattr(request, "_support_private_allowed", None)
        if cached is None:
            cached = support.can_view_private(request.user)
            request._support_private_allowed = cached
        return cached

    # --- masking -----------------------------------------------------------------------------

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if not self.private_fields:
            return qs
        reveal = self.private_allowed(request)
        qs = qs.defer(*self.private_fields).annotate(_reveal=Value(reveal, output_field=BooleanField()))
        if reveal:
            qs = qs.annotate(**{
                f"_preview_{name}": Substr(name, 1, self.preview_chars + 1) for name in self.private_fields
            })
        return qs

    def private_text(self, obj, name: str, *, full: bool = False):
        """The private text of `obj` if this request may see it, else the mask. Only objects
        from `get_queryset` carry the flag, so anything else is masked."""
        if not getattr(obj, "_reveal", False):
            return masked()
        if full:
            return getattr(obj, name)
        text = getattr(obj, f"_preview_{name}", "") or ""
        return text[: self.preview_chars] + "…" if len(text) > self.preview_chars else text

    def shows_private_text(self, obj, *, full: bool) -> bool:
        """Did a page render some of `obj`'s private text unmasked? (An erased value is not.)"""
        if not getattr(obj, "_reveal", False):
            return False
        for name in self.private_fields:
            if getattr(obj, name if full else f"_preview_{name}", ""):
                return True
        return False

    def record_reveals(self, request, view: str, objects, *, full: bool) -> None:
        shown = [o for o in objects if self.shows_private_text(o, full=full)]
        support.reveals_record(
            staff=request.user, view=view,
            objects=[(self.model, o.pk, getattr(o, self.subject_field, None)) for o in shown],
        )

    def object_label(self, obj) -> str:
        """How pages name `obj` (titles, breadcrumbs). Override where `__str__` holds private
        text."""
        return str(obj)

    # --- no oracle ---------------------------------------------------------------------------

    def get_search_fields(self, request):
        fields = list(super().get_search_fields(request))
        if self.private_allowed(request):
            fields += list(self.private_search_fields)
        return fields

    def get_search_results(self, request, queryset, search_term):
        term = (search_term or "").strip()
        if self.uuid_search_fields and term:
            try:
                as_uuid = uuid.UUID(term)
            except ValueError:
                as_uuid = None
            if as_uuid is not None:
                from django.db.models import Q

                match = Q(pk__in=[])
                for name in self.uuid_search_fields:
                    match |= Q(**{name: as_uuid})
                return queryset.filter(match), False
        return super().get_search_results(request, queryset, search_term)

    def lookup_allowed(self, lookup, value, request=None):
        if PRIVATE_LOOKUP_PARTS.intersection(lookup.split("__")) and not self.private_allowed(request):
            return False
        return super().lookup_allowed(lookup, value, request)

    # --- views -------------------------------------------------------------------------------

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None) or {}
        changelist = context.get("cl")
        if changelist is not None and self.private_fields and self.private_allowed(request):
            # Evaluates the page's queryset once; the template reuses the cached rows.
            self.record_reveals(request, "changelist", list(changelist.result_list), full=False)
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        context = getattr(response, "context_data", None) or {}
        obj = context.get("original")
        if obj is not None and self.private_fields and self.private_allowed(request):
            self.record_reveals(request, "change", [obj], full=True)
        return response

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["subtitle"] = context["safe_label"] = self.object_label(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def history_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        if obj is not None:
            label = self.object_label(obj)
            extra_context = {**(extra_context or {}), "object": _Labelled(obj.pk, label),
                             "title": f"Change history: {label}"}
        return super().history_view(request, object_id, extra_context)

    @admin.display(description="user", ordering="user__username")
    def user_ref(self, obj):
        user = getattr(obj, "user", None)
        return user.get_username() if user is not None else "-"


# ---------------------------------------------------------------------------------------------
# Support actions: an intermediate page asking for the reason


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}), max_length=support.REASON_MAX,
        help_text="Required. A ticket number and what the user asked for; it is logged with your "
                  "name. Do not paste the user's private text here.",
    )

    def clean_reason(self):
        try:
            return support.clean_reason(self.cleaned_data.get("reason"))
        except DomainValidationError as error:
            raise forms.ValidationError(error.detail) from None


class ForgetForm(ReasonForm):
    everywhere = forms.BooleanField(
        required=False, label="Forget everywhere",
        help_text="Forget the key in every scope of the user, present and future (tombstone scope *).",
    )
    whole_key = forms.BooleanField(
        required=False, label="Every value of the key",
        help_text="For a multi-valued key: forget every value, not only this one.",
    )


def support_action(modeladmin, request, queryset, *, title: str, intro: str, columns: list[str],
                   rows: list[list], perform, form_class=ReasonForm, warning: str = "",
                   revealed=()):
    """Ask for a reason (and options), then `perform(cleaned_data)` → outcomes. Without a valid
    reason the page is shown again with the error and nothing changes. `revealed` lists the
    objects whose private text `rows` show unmasked (logged as reveals)."""
    applying = "_apply" in request.POST
    form = form_class(request.POST if applying else None)
    if applying and form.is_valid():
        outcomes = perform(form.cleaned_data)
        done = sum(1 for o in outcomes if o.done)
        skipped = Counter(o.outcome for o in outcomes if not o.done)
        text = f"{title}: {done} done"
        if skipped:
            text += "; skipped: " + ", ".join(f"{n} {code}" for code, n in sorted(skipped.items()))
        text += ". The reason is logged under Support actions."
        modeladmin.message_user(request, text, messages.WARNING if skipped else messages.SUCCESS)
        return None
    if revealed:
        modeladmin.record_reveals(request, "action", revealed, full=False)
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "subtitle": None,
        "intro": intro,
        "warning": warning,
        "columns": columns,
        "rows": rows,
        "form": form,
        "selected": [str(pk) for pk in queryset.values_list("pk", flat=True)],
        "action": request.POST.get("action", ""),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "opts": modeladmin.model._meta,
        "media": modeladmin.media + form.media,
    }
    request.current_app = modeladmin.admin_site.name
    return TemplateResponse(request, "admin/support/action_confirm.html", context)


# ---------------------------------------------------------------------------------------------
# The explain view (/admin/support/explain/)


class ExplainForm(forms.Form):
    user = forms.CharField(max_length=150, label="User", help_text="The user ref (username).")
    character = forms.ChoiceField(required=False)
    conversation = forms.UUIDField(required=False, help_text="A conversation id of this user.")
    scene = forms.CharField(required=False, max_length=100)
    now = forms.DateTimeField(
        required=False, label="Time",
        help_text="Valid time, UTC (2026-08-05T12:00:00Z). Empty: now, by the database clock.",
    )
    keys = forms.CharField(required=False, help_text="Only these keys (comma-separated). Empty: every key.")
    capabilities = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="Empty: every capability.",
    )
    requested_by = forms.ChoiceField(initial="assistant")

    def __init__(self, *args, **kwargs):
        from conversations.models import Character
        from policy.domain import REQUESTERS
        from policy.models import Capability

        super().__init__(*args, **kwargs)
        self.fields["character"].choices = [("", "(the conversation's, or none)")] + [
            (slug, f"{slug} — {name}") for slug, name in Character.objects.values_list("slug", "name")
        ]
        self.fields["capabilities"].choices = [(n, n) for n in Capability.objects.values_list("name", flat=True)]
        self.fields["requested_by"].choices = [(r, r) for r in REQUESTERS]

    def clean_keys(self):
        return [k.strip() for k in (self.cleaned_data.get("keys") or "").split(",") if k.strip()]


def explain_view(request):
    """Pick a user, character, conversation, scene and time; see the resolver's result (counts,
    every record id with its step, reason and detail, the prompt projection) and the policy
    engine's per capability (effect, reason, rule ids, each rule's explain reason). Values only
    with `view_private_text`, and then logged. Writes nothing else (no decision-log rows)."""
    if not request.user.has_perm(support.EXPLAIN_PERMISSION):
        raise PermissionDenied
    from conversations.models import Conversation
    from memory.models import MemoryRecord
    from policy.models import PolicyRule

    reveal = support.can_view_private(request.user)
    data = None
    if "user" in request.GET:
        data = request.GET.copy()  # a link may name only the user: the rest has defaults
        data.setdefault("requested_by", "assistant")
    form = ExplainForm(data)
    result = None
    conversations = []
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        try:
            result = support.support_explain(
                user=data["user"], character=data["character"] or None,
                conversation=str(data["conversation"]) if data["conversation"] else None,
                scene=data["scene"] or None, now=data["now"],
                capabilities=data["capabilities"] or [c for c, _ in form.fields["capabilities"].choices],
                requested_by=data["requested_by"], keys=data["keys"] or None,
            )
        except DomainValidationError as error:
            for name, problems in (error.errors or {None: [error.detail]}).items():
                field = name.split(".", 1)[1] if name and name.startswith("context.") else None
                for problem in problems:
                    form.add_error(field if field in form.fields else None, problem)
        if result is not None:
            # Ids to pick from, never titles: the conversation title is the user's own text.
            conversations = list(
                Conversation.objects.filter(user=result.context.user)
                .select_related("character").order_by("-created_at")
                .values_list("pk", "character__slug", "created_at")[:50]
            )
    rows = []
    if result is not None:
        for item in result.records:
            record = item.record
            value = record.value if reveal else None
            rows.append({
                "item": item, "record": record,
                "link": admin_link(MemoryRecord, record.id, record.id),
                "value": value if value else ("" if reveal else masked()),
                "erased": record.status == "forgotten",
            })
        if reveal:
            support.reveals_record(staff=request.user, view="explain", objects=[
                (MemoryRecord, item.record.id, result.context.user.pk)
                for item in result.records if item.record.value
            ])
    context = {
        **admin.site.each_context(request),
        "title": "Explain a context",
        "subtitle": None,
        "form": form,
        "result": result,
        "rows": rows,
        "reveal": reveal,
        "conversations": conversations,
        "rule_opts": PolicyRule._meta,
        "memory_opts": MemoryRecord._meta,
        "media": form.media,
    }
    return TemplateResponse(request, "admin/support/explain.html", context)


def explain_url(**params) -> str:
    from urllib.parse import urlencode

    return reverse("admin:support_explain") + "?" + urlencode({k: v for k, v in params.items() if v})
