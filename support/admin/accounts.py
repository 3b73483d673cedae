"""Who reaches the product: the API tokens the runtime calls with, created with
`manage.py create_api_token NAME` and revoked here, and the users. Users get Django's user
admin, except that deleting a user here is off: erasing a user goes through
`DELETE /api/v1/users/{user}` (the `user_delete` service, SPEC §9), and the stock confirmation
page would list the user's conversations by their private titles."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from config.models import ApiToken
from support.admin.base import SupportAdmin
from support.display import reveal_url
from support.request_reveal import request_may_reveal, request_reveal
from support.services.tokens import api_tokens_revoke


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
        count = api_tokens_revoke(tokens=queryset)
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


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
