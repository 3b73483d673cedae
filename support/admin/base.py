"""The support admin: the base class of every ModelAdmin in the project, the support actions' reason page, and the admin of the support logs, API tokens and users.

`SupportAdmin` is the base class of every ModelAdmin in the project:

- **Private text is masked by default.** A model's `private_fields` (memory values, message
  content, conversation titles) are deferred in every admin queryset, so without
  `support.view_private_text` the text never even leaves the database; pages show "hidden".
  With the permission, changelists show a short preview and change pages the whole text, and
  each object shown unmasked is written to the access log (`PrivateTextAccess`) — one insert
  per page, so query counts stay constant.
- **No oracle.** Without the permission the private fields are not searchable, not sortable and
  not filterable (`?value__startswith=` is refused like any other disallowed lookup), and no
  page prints an object's `__str__` where that could hold private text (a conversation's title):
  `object_label` replaces it in titles, breadcrumbs and the history page.
- **Writes go through the services.** `read_only` admins (everything the services own) allow
  no add, change or delete; the support actions (`support_action`) ask for a reason on an
  intermediate page and call `support.services`, which calls the services and logs the reason.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import BooleanField, Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce, Substr
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path

from config.clock import db_now
from config.models import ApiToken
from support import services as support
from support.display import admin_link, masked
from support.forms import ReasonForm
from support.models import PrivateTextAccess, SupportAction
from support.views import explain_turn_view, explain_view

# Lookup parts that reach private text, from any model: refused without the permission.
PRIVATE_LOOKUP_PARTS = frozenset({"value", "content", "title"})


def count_of(model, fk: str, **filters):
    """A correlated COUNT subquery: per-row counts in the changelist's one query, without the
    GROUP BY a `Count()` join would add to every other column."""
    rows = (
        model.objects.filter(**{fk: OuterRef("pk")}, **filters)
        .order_by().values(fk).annotate(n=Count("*")).values("n")
    )
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


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
# The admin of API tokens, the support logs and users
#
# - API tokens: created with `manage.py create_api_token NAME`, revoked here.
# - The access log (`PrivateTextAccess`) and the support-action log (`SupportAction`, with every
#   action's reason) are read-only: only `support.services` writes them.
# - Users: Django's user admin, except that deleting a user here is off: erasing a user goes
#   through `DELETE /api/v1/users/{user}` (the `user_delete` service, SPEC §9), and the stock
#   confirmation page would list the user's conversations by their private titles.
# - `/admin/support/explain/`: the explain view (`support.views.explain_view`).


@admin.register(ApiToken)
class ApiTokenAdmin(SupportAdmin):
    """Runtime tokens: create them with `manage.py create_api_token NAME`; revoke them here."""

    list_display = ("name", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "prefix")
    readonly_fields = ("name", "prefix", "created_at", "last_used_at", "revoked_at")
    date_hierarchy = "created_at"
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=db_now())
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


class LogAdmin(SupportAdmin):
    read_only = True
    list_select_related = ("content_type", "subject")

    @admin.display(description="object", ordering="content_type")
    def target(self, obj):
        model = obj.content_type.model_class()
        if model is None:
            return f"{obj.content_type} {obj.object_id}"
        try:
            return admin_link(model, obj.object_id, f"{model._meta.verbose_name} {obj.object_id}")
        except NoReverseMatch:  # no admin page for that model
            return f"{model._meta.verbose_name} {obj.object_id}"

    @admin.display(description="staff", ordering="staff_username")
    def staff_ref(self, obj):
        return obj.staff_username

    @admin.display(description="user", ordering="subject__username")
    def subject_ref(self, obj):
        if obj.subject_id is None:
            return "-"
        return obj.subject.get_username() if obj.subject is not None else f"(deleted user {obj.subject_id})"


@admin.register(PrivateTextAccess)
class PrivateTextAccessAdmin(LogAdmin):
    """Who was shown which user's private text, where and when (DESIGN, Privacy)."""

    list_display = ("accessed_at", "staff_ref", "view", "target", "subject_ref")
    list_filter = ("view", "content_type")
    search_fields = ("staff_username", "subject__username", "=object_id")
    date_hierarchy = "accessed_at"
    fields = ("accessed_at", "staff_ref", "view", "target", "subject_ref")
    readonly_fields = fields


@admin.register(SupportAction)
class SupportActionAdmin(LogAdmin):
    """Every support action with its reason: the one place the reasons are kept."""

    list_display = ("acted_at", "staff_ref", "action", "target", "subject_ref", "outcome", "reason")
    list_filter = ("action", "outcome", "content_type")
    search_fields = ("staff_username", "subject__username", "=object_id", "reason")
    date_hierarchy = "acted_at"
    fields = ("acted_at", "staff_ref", "action", "target", "subject_ref", "outcome", "reason", "detail")
    readonly_fields = fields


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class SupportUserAdmin(UserAdmin):
    def has_delete_permission(self, request, obj=None):
        return False


def _with_support_urls(get_urls):
    def get_urls_with_support():
        return [
            path("support/explain/", admin.site.admin_view(explain_view), name="support_explain"),
            path("support/explain/turn/<uuid:turn_id>/", admin.site.admin_view(explain_turn_view),
                 name="support_explain_turn"),
        ] + get_urls()

    get_urls_with_support.support_urls = True
    return get_urls_with_support


# The default site has no hook for extra views; wrapping its get_urls keeps config/urls.py as it is.
if not getattr(admin.site.get_urls, "support_urls", False):
    admin.site.get_urls = _with_support_urls(admin.site.get_urls)
