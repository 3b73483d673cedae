"""The support admin's base: `SupportAdmin`, the base class of every ModelAdmin in the project,
and the support actions' reason page (`support_action`).

`SupportAdmin`:

- **Private text shows only inside a reveal, for its user (SPEC §13 S1).** A model's
  `private_fields` (memory values, message content, conversation titles) are deferred in every
  admin queryset and read back only for the rows of the user of the staff member's open reveal
  (`support.request_reveal.request_reveal`): a preview on changelists, the whole text on change
  pages. Every other row — and every row without a reveal, whatever the staff member's permissions —
  shows the mask, with a link that opens a reveal of that row's user for staff who may. A key's
  free part (`private_key_fields`: the `priya` of `people.priya.works_at`) is masked the same
  way, in the database (`support.display.masked_key_sql`). Each page that showed private text
  writes one row to the access log (`support.reveals.reveal_page_log`), never one per value.
- **No oracle.** Private fields are searchable, sortable and filterable only inside a reveal,
  and then only among its user's rows: search and sort read annotations that are empty (or
  masked) for everyone else, and a query-string lookup on a private field (`?value__startswith=`)
  is refused without a reveal and narrows the list to its user with one. No page prints an
  object's `__str__` where that could hold private text: `object_label` replaces it in titles,
  breadcrumbs and the history page.
- **Writes go through the services.** `read_only` admins (everything the services own) allow
  no add, change or delete; the support actions (`support_action`) ask for a reason on an
  intermediate page and call `support.services`, which calls the services and logs the reason.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import IGNORED_PARAMS
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Substr
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from memory.domain import loggable_key
from support import services as support
from support.display import has_free_part, masked, masked_key_sql, reveal_url
from support.forms import ReasonForm
from support.request_reveal import request_may_reveal, request_reveal
from support.reveals import reveal_page_log

# Lookup parts that reach private text, from any model: refused outside a reveal.
PRIVATE_LOOKUP_PARTS = frozenset({"value", "content", "title"})


def private_text_columns(name: str):
    """The two columns of the private text field `name` (S1): its preview on the list, the
    whole text on the change page, each the mask outside a reveal of its user. A model admin
    takes them as `<name>_preview, <name>_full = private_text_columns("<name>")`."""

    @admin.display(description=name)
    def preview(self, obj):
        return self.private_text(obj, name)

    @admin.display(description=name)
    def full(self, obj):
        return self.private_text(obj, name, full=True)

    return preview, full


def private_key_column(name: str = "key"):
    """The list and page column of the memory key `name` (one of `private_key_fields`): whole
    inside a reveal of its user, its free part masked otherwise (S1); sorted by what it shows,
    never by a hidden name. A model admin takes it as `key_ref = private_key_column()`."""

    @admin.display(description=name, ordering=f"_shown_{name}")
    def column(self, obj):
        return self.private_key(obj, name)

    return column


def count_column(annotation: str, description: str):
    """A list column showing the per-row count `annotation` (one of `annotations()`, a
    `count_of`) and sorted by it: `n_rules = count_column("_rules", "rules")`."""

    @admin.display(description=description, ordering=annotation)
    def column(self, obj):
        return getattr(obj, annotation)

    return column


def count_of(model, fk: str, **filters):
    """A correlated COUNT subquery: per-row counts in the changelist's one query, without the
    GROUP BY a `Count()` join would add to every other column."""
    rows = (
        model.objects.filter(**{fk: OuterRef("pk")}, **filters)
        .order_by()
        .values(fk)
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


@dataclass(frozen=True)
class _Labelled:
    """Stands in for an object on the history page: its pk, and a text-free label."""

    pk: object
    label: str

    def __str__(self) -> str:
        return self.label


KEY_MASK_TITLE = (
    "A name from the user's words: shown only inside a reveal of this user's private text (S1)."
)


def key_html(shown: str):
    """A key as a page shows it: a masked free part (`*`) marked as hidden private text."""
    if "*" not in (shown or ""):
        return shown
    before, _, after = shown.partition("*")
    return format_html(
        '{}<span class="private-masked" title="{}">*</span>{}', before, KEY_MASK_TITLE, after
    )


class SupportAdmin(admin.ModelAdmin):
    # Text columns: masked outside a reveal of their user, searched inside one (its user's rows).
    private_fields: tuple[str, ...] = ()
    private_key_fields: tuple[str, ...] = ()  # memory keys: their free part is private text
    uuid_search_fields: tuple[str, ...] = ()  # a search term that is a UUID matches these exactly
    read_only = False  # the services own these rows: no add, change or delete here
    subject_field = "user_id"  # whose private text it is
    preview_chars = 80
    change_form_template = "admin/support/change_form.html"

    def __init_subclass__(cls, **kwargs):
        # A read-only admin shows every field it lists read-only (unless it says otherwise).
        super().__init_subclass__(**kwargs)
        if cls.read_only and cls.fields and "readonly_fields" not in cls.__dict__:
            cls.readonly_fields = cls.fields

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

    # --- masking -----------------------------------------------------------------------------

    @property
    def masks(self) -> bool:
        return bool(self.private_fields or self.private_key_fields)

    def reveal_of(self, request):
        """The staff member's open reveal (`support.reveals.Reveal`), or None."""
        return request_reveal(request)

    def reveal_subject(self, request) -> int | None:
        """The user whose private text this request may show (its open reveal's), or None."""
        reveal = request_reveal(request)
        return reveal.subject_id if reveal is not None else None

    def may_reveal(self, request) -> bool:
        """May this staff member open a reveal (`view_private_text`)?"""
        return request_may_reveal(request)

    def annotations(self) -> dict:
        """The columns each row of this admin's list carries besides its fields (counts and
        flags its columns show and sort by), by name."""
        return {}

    def get_queryset(self, request):
        extra = self.annotations()
        qs = self._masked_queryset(request)
        return qs.annotate(**extra) if extra else qs

    def _masked_queryset(self, request):
        if not self.masks:
            return super().get_queryset(request)
        # ModelAdmin.get_queryset, with the ordering applied after the annotations it may use.
        qs = self.model._default_manager.get_queryset()
        subject = self.reveal_subject(request)
        mine = Q(**{self.subject_field: subject}) if subject is not None else None

        def only_mine(expression, otherwise, field):
            if mine is None:
                return otherwise
            return Case(When(mine, then=expression), default=otherwise, output_field=field)

        annotations = {
            "_reveal": (
                ExpressionWrapper(mine, output_field=BooleanField())
                if mine is not None
                else Value(False)
            ),
            "_may_reveal": Value(request_may_reveal(request)),
        }
        for name in self.private_fields:
            annotations[f"_preview_{name}"] = only_mine(
                Substr(name, 1, self.preview_chars + 1), Value(""), TextField()
            )
            if mine is not None:
                nothing = Value(None, output_field=TextField())
                annotations[f"_search_{name}"] = only_mine(F(name), nothing, TextField())
        for name in self.private_key_fields:
            annotations[f"_shown_{name}"] = only_mine(F(name), masked_key_sql(name), CharField())
        qs = qs.defer(*self.private_fields, *self.private_key_fields).annotate(**annotations)
        if mine is not None and self.private_lookups_in(request):
            qs = qs.filter(mine)  # a private filter narrows the list to the reveal's user
        ordering = self.get_ordering(request)
        return qs.order_by(*ordering) if ordering else qs

    def subject_ref(self, obj) -> str:
        """The username of the user `obj`'s private text belongs to ("" if unknown)."""
        user = getattr(obj, "user", None)
        return user.get_username() if user is not None else ""

    def mask(self, obj, *, full: bool = False):
        """The mask for `obj`'s private text; for staff who may open a reveal, with the link
        that opens one for its user and comes back here."""
        if not getattr(obj, "_may_reveal", False):
            return masked()
        ref = self.subject_ref(obj)
        if not ref:
            return masked()
        opts = self.model._meta
        back = (
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
            if full
            else reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        )
        return masked(reveal_url(ref, back), short=not full)

    def private_text(self, obj, name: str, *, full: bool = False):
        """The private text of `obj` if this request may see it (a reveal of its user), else
        the mask. Only objects from `get_queryset` carry the flag, so anything else is masked."""
        if not getattr(obj, "_reveal", False):
            return self.mask(obj, full=full)
        if full:
            return getattr(obj, name)
        text = getattr(obj, f"_preview_{name}", "") or ""
        return text[: self.preview_chars] + "…" if len(text) > self.preview_chars else text

    def private_key(self, obj, name: str = "key"):
        """A key of `obj` as this request may see it: whole inside a reveal of its user, its free
        part masked otherwise."""
        shown = getattr(obj, f"_shown_{name}", None)
        return key_html(shown or loggable_key(getattr(obj, name, "")))

    def shows_private_text(self, obj, *, full: bool) -> bool:
        """Did a page render some of `obj`'s private text unmasked? (An erased value is not.)"""
        if not getattr(obj, "_reveal", False):
            return False
        for name in self.private_fields:
            if getattr(obj, name if full else f"_preview_{name}", ""):
                return True
        keys = (getattr(obj, f"_shown_{name}", "") for name in self.private_key_fields)
        return any(has_free_part(key) for key in keys)

    def log_page(self, request, view: str, objects, *, full: bool, object_id="") -> None:
        """One access-log row for a page that showed private text of any of `objects`."""
        reveal = request_reveal(request)
        if reveal is None or not self.masks:
            return
        shown = sum(1 for o in objects if self.shows_private_text(o, full=full))
        reveal_page_log(
            reveal=reveal,
            staff=request.user,
            view=view,
            model=self.model,
            object_id=object_id,
            shown=shown,
        )

    def object_label(self, obj) -> str:
        """How pages name `obj` (titles, breadcrumbs, the action checkbox). Override where
        `__str__` holds private text."""
        return str(obj)

    def action_checkbox(self, obj):
        """Django's action checkbox, named by `object_label` rather than `__str__`."""
        checkbox = forms.CheckboxInput(
            {
                "class": "action-select",
                "aria-label": format_html(
                    "Select this object for an action - {}", self.object_label(obj)
                ),
            },
            lambda value: False,
        )
        return checkbox.render(helpers.ACTION_CHECKBOX_NAME, str(obj.pk))

    # --- no oracle ---------------------------------------------------------------------------

    def private_lookup(self, lookup: str) -> bool:
        parts = set(lookup.split("__"))
        return bool(parts & PRIVATE_LOOKUP_PARTS or parts & set(self.private_key_fields))

    def private_lookups_in(self, request) -> bool:
        return any(self.private_lookup(name) for name in request.GET if name not in IGNORED_PARAMS)

    def get_search_fields(self, request):
        fields = list(super().get_search_fields(request))
        fields += [f"_shown_{name}" for name in self.private_key_fields]
        if self.reveal_subject(request) is not None:
            fields += [f"_search_{name}" for name in self.private_fields]
        return fields

    def get_search_results(self, request, queryset, search_term):
        term = (search_term or "").strip()
        if self.uuid_search_fields and term:
            try:
                as_uuid = uuid.UUID(term)
            except ValueError:
                as_uuid = None
            if as_uuid is not None:
                match = Q(pk__in=[])
                for name in self.uuid_search_fields:
                    match |= Q(**{name: as_uuid})
                return queryset.filter(match), False
        return super().get_search_results(request, queryset, search_term)

    def lookup_allowed(self, lookup, value, request=None):
        if self.private_lookup(lookup) and self.reveal_subject(request) is None:
            return False
        return super().lookup_allowed(lookup, value, request)

    # --- views -------------------------------------------------------------------------------

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None) or {}
        changelist = context.get("cl")
        if changelist is not None and self.masks:
            # Evaluates the page's queryset once; the template reuses the cached rows.
            self.log_page(request, "changelist", list(changelist.result_list), full=False)
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        context = getattr(response, "context_data", None) or {}
        obj = context.get("original")
        if obj is not None:
            self.log_page(request, "change", [obj], full=True, object_id=obj.pk)
        return response

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["subtitle"] = context["safe_label"] = self.object_label(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def history_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        if obj is not None:
            label = self.object_label(obj)
            extra_context = {
                **(extra_context or {}),
                "object": _Labelled(obj.pk, label),
                "title": f"Change history: {label}",
            }
        return super().history_view(request, object_id, extra_context)

    @admin.display(description="user", ordering="user__username")
    def user_ref(self, obj):
        user = getattr(obj, "user", None)
        return user.get_username() if user is not None else "-"


class CatalogAdmin(SupportAdmin):
    """A catalog other rows refer to by its key (characters by slug, capabilities by name):
    editable, but its `key_fields` are fixed once it exists — changing one would orphan the
    rows that name it — and nothing is deleted here (those rows protect it)."""

    key_fields: tuple[str, ...] = ()

    def get_readonly_fields(self, request, obj=None):
        fixed = tuple(super().get_readonly_fields(request, obj))
        return (*self.key_fields, *fixed) if obj is not None else fixed

    def has_delete_permission(self, request, obj=None):
        return False


# ---------------------------------------------------------------------------------------------
# Support actions: an intermediate page asking for the reason


def withheld_words(outcomes) -> str:
    """What the forgets among `outcomes` withhold, in counts only — never which words (S1):
    the messages the companion no longer sees (F6) and the other memories it no longer uses
    (F7.2)."""
    done = [o.detail for o in outcomes if "withheld_messages" in o.detail]
    if not done:
        return ""
    messages_ = sum(d["withheld_messages"] for d in done)
    memories = sum(d["withheld_memories"] for d in done)
    return (
        f". The companion no longer sees {messages_} message{'' if messages_ == 1 else 's'} "
        f"and no longer uses {memories} other memor{'y' if memories == 1 else 'ies'} "
        "that held the forgotten values"
    )


def support_action(
    modeladmin,
    request,
    queryset,
    *,
    title: str,
    intro: str,
    columns: list[str],
    rows: list[list],
    perform,
    form_class=ReasonForm,
    warning: str = "",
    revealed=(),
):
    """Ask for a reason (and options), then `perform(cleaned_data)` → outcomes. Without a valid
    reason the page is shown again with the error and nothing changes. `revealed` lists the
    objects `rows` show (one access-log row when any of their private text showed, S1)."""
    applying = "_apply" in request.POST
    form = form_class(request.POST if applying else None)
    if applying and form.is_valid():
        outcomes = perform(form.cleaned_data)
        done = sum(1 for o in outcomes if o.done)
        skipped = Counter(o.outcome for o in outcomes if not o.done)
        text = f"{title}: {done} done"
        if skipped:
            text += "; skipped: " + ", ".join(f"{n} {code}" for code, n in sorted(skipped.items()))
        text += withheld_words(outcomes)
        text += ". The reason is logged under Support actions."
        modeladmin.message_user(request, text, messages.WARNING if skipped else messages.SUCCESS)
        return None
    if revealed:
        modeladmin.log_page(request, "action", revealed, full=False)
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


class SetOrNotFilter(admin.SimpleListFilter):
    """A list filter of two choices: the rows whose `field` is set, or those where it is null.
    `options` maps each choice's value to its words and whether it keeps the null rows, in the
    order the filter lists them (`set_or_not_filter` makes one)."""

    field: str
    options: dict[str, tuple[str, bool]]

    def lookups(self, request, model_admin):
        return [(value, words) for value, (words, _) in self.options.items()]

    def queryset(self, request, queryset):
        if self.value() in self.options:
            return queryset.filter(**{f"{self.field}__isnull": self.options[self.value()][1]})
        return queryset


def set_or_not_filter(
    title: str, field: str, options: dict[str, tuple[str, bool]], parameter: str = ""
) -> type[SetOrNotFilter]:
    """A `SetOrNotFilter` on `field`, titled `title` and read from `?<parameter>=` (the title
    unless given)."""
    attrs = {"title": title, "parameter_name": parameter or title, "field": field}
    attrs["options"] = options
    return type(f"{field.title().replace('_', '')}Filter", (SetOrNotFilter,), attrs)


# Rows revoked from a moment on and kept (boundary rules, connections): revoked or not yet.
RevokedFilter = set_or_not_filter(
    "revoked", "revoked_at", {"no": ("not revoked", True), "yes": ("revoked", False)}
)
