"""Support's view of connections (SPEC §15 M1): who has which, its access, characters, expiry
and last use — never a token (only its hash is stored, and that is not shown) — and a revoke
action. Connections are created by their users on their page or by `manage.py
create_connection`, never here."""

from __future__ import annotations

from django.contrib import admin, messages

from support.admin.base import RevokedFilter, SupportAdmin

from .models import Connection
from .services import connections_revoke


@admin.register(Connection)
class ConnectionAdmin(SupportAdmin):
    read_only = True  # made by their users (or `create_connection`); support only revokes
    list_display = (
        "name",
        "user",
        "prefix",
        "access",
        "all_characters",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("access", RevokedFilter)
    search_fields = ("name", "prefix", "user__username")
    fields = (
        "name",
        "user",
        "prefix",
        "access",
        "all_characters",
        "characters",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    list_select_related = ("user",)
    actions = ["revoke"]

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("agents.revoke_connection")

    @admin.action(description="Revoke selected connections", permissions=["revoke"])
    def revoke(self, request, queryset):
        count = connections_revoke(queryset)
        self.message_user(request, f"Revoked {count} connection(s).", messages.SUCCESS)
