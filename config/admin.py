from django.contrib import admin, messages
from django.utils import timezone

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Runtime tokens: create them with `manage.py create_api_token NAME`; revoke them here."""

    list_display = ("name", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "prefix")
    readonly_fields = ("name", "prefix", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
