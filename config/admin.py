"""API tokens, the support logs, users, and the support explain view in the admin (issue 6).

- API tokens: created with `manage.py create_api_token NAME`, revoked here.
- The access log (`PrivateTextAccess`) and the support-action log (`SupportAction`, with every
  action's reason) are read-only: only `config.support` writes them.
- Users: Django's user admin, except that deleting a user here is off — erasing a user goes
  through `DELETE /api/v1/users/{user}` (the `user_delete` service, SPEC §9), and the stock
  confirmation page would list the user's conversations by their private titles.
- `/admin/support/explain/`: the explain view (`config.support_admin.explain_view`).
"""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.urls import NoReverseMatch, path

from config.clock import db_now

from .models import ApiToken, PrivateTextAccess, SupportAction
from .support_admin import SupportAdmin, explain_view


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
        from .support_admin import admin_link

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
        ] + get_urls()

    get_urls_with_support.support_urls = True
    return get_urls_with_support


# The default site has no hook for extra views; wrapping its get_urls keeps config/urls.py as it is.
if not getattr(admin.site.get_urls, "support_urls", False):
    admin.site.get_urls = _with_support_urls(admin.site.get_urls)
