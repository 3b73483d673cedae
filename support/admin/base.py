"""The support admin: the base class of every ModelAdmin in the project, the support actions' reason page, and the admin of the support logs, API tokens and users.

`SupportAdmin` is the base class of every ModelAdmin in the project:

- **Private text shows only inside a reveal, for its user (SPEC §13 S1).** A model's
  `private_fields` (memory values, message content, conversation titles) are deferred in every
  admin queryset and read back only for the rows of the user of the staff member's open reveal
  (`support.request_reveal.request_reveal`): a preview on changelists, the whole text on change pages.
  Every other row — and every row without a reveal, whatever the staff member's permissions —
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
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
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
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html

from config import credentials
from config.clock import db_now
from config.models import ApiToken
from memory.domain import loggable_key
from support import services as support
from support.display import admin_link, has_free_part, masked, masked_key_sql, reveal_url
from support.forms import ReasonForm
from support.models import PrivateTextAccess, RevealGrant, SupportAction
from support.request_reveal import request_may_reveal, request_reveal
from support.reveals import reveal_page_log
from support.views import (
    explain_turn_view,
    explain_view,
    reveal_close_view,
    reveal_extend_view,
    reveal_view,
)

# Lookup parts that reach private text, from any model: refused outside a reveal.
PRIVATE_LOOKUP_PARTS = frozenset({"value", "content", "title"})


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
    private_fields: tuple[str, ...] = ()  # text columns: masked outside a reveal of their user
    private_search_fields: tuple[str, ...] = ()  # searched inside a reveal, among its user's rows
    private_key_fields: tuple[str, ...] = ()  # memory keys: their free part is private text
    uuid_search_fields: tuple[str, ...] = ()  # a search term that is a UUID matches these exactly
    read_only = False  # the services own these rows: no add, change or delete here
    subject_field = "user_id"  # whose private text it is
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

    def get_queryset(self, request):
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
            if mine is not None and name in self.private_search_fields:
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
            fields += [f"_search_{name}" for name in self.private_search_fields]
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


# ---------------------------------------------------------------------------------------------
# Support actions: an intermediate page asking for the reason


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
        withheld = [
            o.detail["withheld_messages"] for o in outcomes if "withheld_messages" in o.detail
        ]
        if withheld:  # F6: the count only, never which words (S1)
            n = sum(withheld)
            text += (
                f". The companion no longer sees {n} message{'' if n == 1 else 's'} "
                "that held the forgotten values"
            )
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
        revoked = list(queryset.filter(revoked_at__isnull=True))
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=db_now())
        credentials.forget(revoked)  # refused here at once; by other processes within seconds
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


class LogAdmin(SupportAdmin):
    read_only = True
    list_select_related = ("content_type", "subject")

    @admin.display(description="object", ordering="content_type")
    def target(self, obj):
        if obj.content_type_id is None:
            return "-"
        model = obj.content_type.model_class()
        if model is None:
            return f"{obj.content_type} {obj.object_id}"
        if not obj.object_id:
            return model._meta.verbose_name_plural
        try:
            return admin_link(model, obj.object_id, f"{model._meta.verbose_name} {obj.object_id}")
        except NoReverseMatch:  # no admin page for that model
            return f"{model._meta.verbose_name} {obj.object_id}"

    @admin.display(description="staff", ordering="staff_username")
    def staff_ref(self, obj):
        return obj.staff_username

    @admin.display(description="user", ordering="subject__username")
    def subject_ref(self, obj):
        if getattr(obj, "subject_pseudonym", ""):
            return obj.subject_pseudonym  # the user was deleted (S2)
        if obj.subject_id is None:
            return "-"
        return (
            obj.subject.get_username()
            if obj.subject is not None
            else f"(deleted user {obj.subject_id})"
        )


@admin.register(PrivateTextAccess)
class PrivateTextAccessAdmin(LogAdmin):
    """The access log (S1, S2): every reveal opened, extended, closed or expired, and every page
    that showed private text under one — who, for which user and reason, which kind of page,
    when. Append-only; readable only with `view_privatetextaccess`, which the Support group
    does not have."""

    list_display = (
        "accessed_at",
        "staff_ref",
        "event",
        "subject_ref",
        "view",
        "target",
        "shown",
        "reason",
    )
    list_filter = ("event", "view", "content_type")
    list_select_related = ("content_type", "subject", "grant")
    search_fields = ("staff_username", "subject__username", "subject_pseudonym", "=object_id")
    date_hierarchy = "accessed_at"
    fields = (
        "accessed_at",
        "staff_ref",
        "event",
        "subject_ref",
        "reason",
        "grant_ref",
        "view",
        "target",
        "shown",
    )
    readonly_fields = fields

    @admin.display(description="reason")
    def reason(self, obj):
        return obj.grant.reason if obj.grant_id else "-"

    @admin.display(description="reveal")
    def grant_ref(self, obj):
        return admin_link(RevealGrant, obj.grant_id, obj.grant_id) if obj.grant_id else "-"


class RevealStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("open", "not closed yet"), ("ended", "ended")]

    def queryset(self, request, queryset):
        if self.value() == "open":
            return queryset.filter(closed_at__isnull=True)
        if self.value() == "ended":
            return queryset.filter(closed_at__isnull=False)
        return queryset


@admin.register(RevealGrant)
class RevealGrantAdmin(LogAdmin):
    """The reveals (S1): staff member, user, reason, opened, expires, closed and how. Read-only
    (staff open, extend and close their own from the banner every admin page shows); readable
    only with `view_revealgrant`, which the Support group does not have. A reveal that passed its
    time without a page noticing still reads "not closed yet" here; its events say the rest."""

    list_display = (
        "opened_at",
        "staff_ref",
        "subject_ref",
        "reason",
        "expires_at",
        "closed_at",
        "ended",
    )
    list_filter = (RevealStateFilter, "ended")
    list_select_related = ("subject",)
    search_fields = ("staff_username", "subject__username", "subject_pseudonym", "reason")
    date_hierarchy = "opened_at"
    fields = (
        "id",
        "staff_ref",
        "subject_ref",
        "reason",
        "opened_at",
        "expires_at",
        "closed_at",
        "ended",
        "events_ref",
    )
    readonly_fields = fields

    @admin.display(description="access log")
    def events_ref(self, obj):
        url = reverse("admin:support_privatetextaccess_changelist") + f"?grant__id__exact={obj.pk}"
        return format_html('<a href="{}">Every event and page of this reveal</a>', url)


@admin.register(SupportAction)
class SupportActionAdmin(LogAdmin):
    """Every support action with its reason: the one place the reasons are kept. The detail's
    key is shown without its free part (S1)."""

    list_display = ("acted_at", "staff_ref", "action", "target", "subject_ref", "outcome", "reason")
    list_filter = ("action", "outcome", "content_type")
    search_fields = ("staff_username", "subject__username", "=object_id", "reason")
    date_hierarchy = "acted_at"
    fields = (
        "acted_at",
        "staff_ref",
        "action",
        "target",
        "subject_ref",
        "outcome",
        "reason",
        "detail_shown",
    )
    readonly_fields = fields

    @admin.display(description="detail")
    def detail_shown(self, obj):
        detail = dict(obj.detail or {})
        if isinstance(detail.get("key"), str):
            detail["key"] = loggable_key(detail["key"])
        return format_html("<code>{}</code>", detail)


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class SupportUserAdmin(UserAdmin):
    """Django's user admin, with the way into a reveal of the user's private text (S1) on the
    user's page."""

    change_form_template = "admin/support/user_change_form.html"

    def has_delete_permission(self, request, obj=None):
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        if obj is not None and request_may_reveal(request):
            reveal = request_reveal(request)
            extra_context = {
                **(extra_context or {}),
                "reveal_url": reveal_url(obj.get_username(), request.path),
                "revealing_this_user": reveal is not None and reveal.subject_id == obj.pk,
            }
        return super().change_view(request, object_id, form_url, extra_context)


def _with_support_urls(get_urls):
    def get_urls_with_support():
        return [
            path("support/explain/", admin.site.admin_view(explain_view), name="support_explain"),
            path(
                "support/explain/turn/<uuid:turn_id>/",
                admin.site.admin_view(explain_turn_view),
                name="support_explain_turn",
            ),
            path("support/reveal/", admin.site.admin_view(reveal_view), name="support_reveal"),
            path(
                "support/reveal/<uuid:grant_id>/extend/",
                admin.site.admin_view(reveal_extend_view),
                name="support_reveal_extend",
            ),
            path(
                "support/reveal/<uuid:grant_id>/close/",
                admin.site.admin_view(reveal_close_view),
                name="support_reveal_close",
            ),
        ] + get_urls()

    get_urls_with_support.support_urls = True
    return get_urls_with_support


def _with_reveal_context(each_context):
    """Every admin page knows the staff member's open reveal (the banner in
    `admin/base_site.html`), looked up once per request."""

    def each_context_with_reveal(request):
        context = each_context(request)
        context["support_reveal"] = request_reveal(request)
        context["support_may_reveal"] = request_may_reveal(request)
        return context

    each_context_with_reveal.support_reveal = True
    return each_context_with_reveal


# The default site has no hook for extra views; wrapping its get_urls keeps config/urls.py as it is.
if not getattr(admin.site.get_urls, "support_urls", False):
    admin.site.get_urls = _with_support_urls(admin.site.get_urls)
if not getattr(admin.site.each_context, "support_reveal", False):
    admin.site.each_context = _with_reveal_context(admin.site.each_context)
