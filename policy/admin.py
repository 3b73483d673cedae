"""Admin for support staff. The capability catalog is editable (its questions are product copy);
rules, versions, media jobs and the decision log are read-only here, because the services are
their only writers (DESIGN habit 2) and the log is an audit trail. None of them holds message or
memory text, so nothing here needs the `view_private_text` permission."""

from django.contrib import admin

from .models import Capability, DecisionLog, MediaJob, PolicyRule


@admin.register(Capability)
class CapabilityAdmin(admin.ModelAdmin):
    list_display = ["name", "question"]
    search_fields = ["name"]

    def get_readonly_fields(self, request, obj=None):
        # Rules and logs refer to a capability by name: renaming one would orphan them.
        return ["name"] if obj is not None else []

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(PolicyRule)
class PolicyRuleAdmin(ReadOnlyAdmin):
    list_display = ["id", "user", "capability", "effect", "source", "scope_kind", "requested_by",
                    "valid_from", "valid_until", "revoked_at", "version"]
    list_filter = ["capability", "effect", "source", "scope_kind"]
    search_fields = ["user__username", "id"]
    list_select_related = ["user", "capability"]


@admin.register(MediaJob)
class MediaJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "user", "capability", "status", "reason", "created_at", "started_at", "finished_at"]
    list_filter = ["status", "capability"]
    search_fields = ["user__username", "id", "idempotency_key"]
    list_select_related = ["user", "capability"]


@admin.register(DecisionLog)
class DecisionLogAdmin(ReadOnlyAdmin):
    list_display = ["id", "user", "capability", "requested_by", "effect", "reason", "decided_at"]
    list_filter = ["effect", "reason", "capability"]
    search_fields = ["user__username", "id"]
    list_select_related = ["user"]
