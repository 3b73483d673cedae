"""The support logs in the admin (SPEC §13 S1, S2): the access log (`PrivateTextAccess`), the
reveals (`RevealGrant`) and the support-action log (`SupportAction`, with every action's
reason). All read-only: only `support.services` and `support.reveals` write them."""

from __future__ import annotations

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from memory.domain import loggable_key
from support.admin.base import SupportAdmin, set_or_not_filter
from support.display import admin_link
from support.models import PrivateTextAccess, RevealGrant, SupportAction


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
    fields = (*list_display, "grant_ref")

    @admin.display(description="reason")
    def reason(self, obj):
        return obj.grant.reason if obj.grant_id else "-"

    @admin.display(description="reveal")
    def grant_ref(self, obj):
        return admin_link(RevealGrant, obj.grant_id, obj.grant_id) if obj.grant_id else "-"


RevealStateFilter = set_or_not_filter(
    "state", "closed_at", {"open": ("not closed yet", True), "ended": ("ended", False)}
)


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
    fields = ("id", *list_display, "events_ref")

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
    fields = (*list_display, "detail_shown")

    @admin.display(description="detail")
    def detail_shown(self, obj):
        detail = dict(obj.detail or {})
        if isinstance(detail.get("key"), str):
            detail["key"] = loggable_key(detail["key"])
        return format_html("<code>{}</code>", detail)
