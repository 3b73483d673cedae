"""Boundary policy in the admin, for support staff.

The capability catalog is editable (its questions are product copy). Rules, policy versions,
the decision log, answers and media jobs are read-only: the services are their only writers
(DESIGN habit 2) and the log is an audit trail. Support revokes a rule only through the
"revoke rule" action, which asks for a reason and calls `rule_revoke` (D5, D7). None of these
tables holds message or memory text (D10), so nothing here is masked; a rule's conversation is
named by its id, never by its title.
"""

from django.contrib import admin
from django.utils.html import format_html

from conversations.models import Conversation
from policy.models import (
    Capability,
    DecisionLog,
    DefaultsPolicyVersion,
    MediaJob,
    PolicyAnswer,
    PolicyRule,
    UserPolicyVersion,
)
from support import requesters
from support import services as support
from support.admin.base import (
    CatalogAdmin,
    RevokedFilter,
    SupportAdmin,
    count_column,
    count_of,
    set_or_not_filter,
    support_action,
)
from support.display import admin_link


def owner(obj):
    return obj.user.get_username() if obj.user_id else "(product default)"


@admin.register(Capability)
class CapabilityAdmin(CatalogAdmin):
    """Rules and logs refer to a capability by name: renaming one would orphan them."""

    key_fields = ("name",)
    list_display = ("name", "question", "n_rules")
    search_fields = ("name",)

    def annotations(self):
        return {"_rules": count_of(PolicyRule, "capability")}

    n_rules = count_column("_rules", "rules")


OwnerFilter = set_or_not_filter(
    "owner", "user", {"user": ("a user's rule", False), "default": ("product default", True)}
)


class CapabilityColumn:
    @admin.display(description="capability", ordering="capability")
    def capability_name(self, obj):
        return obj.capability_id  # the name is the key: no join


@admin.register(PolicyRule)
class PolicyRuleAdmin(CapabilityColumn, SupportAdmin):
    read_only = True
    list_display = (
        "id",
        "owner_ref",
        "capability_name",
        "effect",
        "source",
        "scope_ref",
        "requested_by",
        "valid_from",
        "valid_until",
        "revoked_at",
        "version",
    )
    list_filter = (
        "capability",
        "effect",
        "source",
        "scope_kind",
        "requested_by",
        RevokedFilter,
        OwnerFilter,
    )
    search_fields = ("user__username", "capability__name")
    search_help_text = "A username or capability, or a rule id."
    uuid_search_fields = ("id", "conversation_id", "supersedes_id")
    list_select_related = ("user", "character")
    date_hierarchy = "created_at"
    actions = ("revoke_rules",)
    fields = (*list_display, "supersedes_ref", "created_at")

    @admin.display(description="user", ordering="user__username")
    def owner_ref(self, obj):
        return owner(obj)

    @admin.display(description="scope", ordering="scope_kind")
    def scope_ref(self, obj):
        if obj.scope_kind == "character":
            return f"character {obj.character.slug}"
        if obj.scope_kind == "conversation":
            return format_html("conversation {}", admin_link(Conversation, obj.conversation_id))
        if obj.scope_kind == "scene":
            return format_html(
                "scene {} in {}", obj.scene, admin_link(Conversation, obj.conversation_id)
            )
        return "global"

    @admin.display(description="supersedes")
    def supersedes_ref(self, obj):
        return admin_link(PolicyRule, obj.supersedes_id)

    @admin.action(description="Revoke rule…", permissions=["revoke_rule"])
    def revoke_rules(self, request, queryset):
        rules = list(queryset.select_related("user", "character"))
        defaults = sum(1 for r in rules if r.user_id is None)
        return support_action(
            self,
            request,
            queryset,
            title="Revoke rule",
            intro="Each selected rule is revoked now through the revoke service (SPEC D5): it "
            "stops "
            "deciding from this moment, its owner's policy version goes up (D7) so queued media "
            "jobs are decided again, and the rule stays in history. Revoked rules are skipped.",
            warning=(
                f"{defaults} of these rules are product defaults: revoking them changes the "
                "decision for every user."
                if defaults
                else ""
            ),
            columns=["rule", "user", "capability", "effect", "source", "scope", "revoked at"],
            rows=[
                [
                    admin_link(PolicyRule, r.pk),
                    owner(r),
                    r.capability_id,
                    r.effect,
                    r.source,
                    self.scope_ref(r),
                    r.revoked_at or "-",
                ]
                for r in rules
            ],
            perform=lambda data: support.support_rule_revoke(
                staff=request.user,
                rule_ids=[r.pk for r in rules],
                reason=data["reason"],
            ),
        )


@admin.register(UserPolicyVersion)
class UserPolicyVersionAdmin(SupportAdmin):
    read_only = True
    list_display = ("user_ref", "version")
    search_fields = ("user__username",)
    list_select_related = ("user",)
    fields = ("user_ref", "version")


@admin.register(DefaultsPolicyVersion)
class DefaultsPolicyVersionAdmin(SupportAdmin):
    read_only = True
    list_display = ("id", "version")
    fields = ("version",)


@admin.register(DecisionLog)
class DecisionLogAdmin(SupportAdmin):
    """D10: the allow-listed fields only; never text."""

    read_only = True
    # The decision: whose, which capability, who asked, and what was decided why.
    _decision = (
        "id",
        "user_ref",
        "capability",
        "requested_by",
        "requester_ref",
        "effect",
        "reason",
    )
    list_display = (
        *_decision,
        "n_rules",
        "version",
        "answered",
        "decided_at",
    )
    list_filter = ("effect", "reason", "capability", "requested_by")
    search_fields = ("user__username", "capability", "=requester")
    search_help_text = "A username or capability, a requester (connection:<id>), or a decision id."
    uuid_search_fields = ("id",)
    list_select_related = ("user", "answer")
    date_hierarchy = "decided_at"
    fields = (
        *_decision,
        "rule_refs",
        "version",
        "scope_ids",
        "decided_at",
        "answer_ref",
    )

    def get_changelist_instance(self, request):
        """The page's decisions, each with its requester's name (one query for the page)."""
        changelist = super().get_changelist_instance(request)
        named = requesters.names(d.requester for d in changelist.result_list)
        for decision in changelist.result_list:
            decision.requester_name = named.get(decision.requester)
        return changelist

    @admin.display(description="requester", ordering="requester")
    def requester_ref(self, obj):
        """Which personal connection asked (M3): its name and id; `-` for the chat runtime."""
        if not hasattr(obj, "requester_name"):
            obj.requester_name = requesters.names([obj.requester]).get(obj.requester)
        return requesters.label(obj.requester, obj.requester_name)

    @admin.display(description="rules")
    def n_rules(self, obj):
        return len(obj.rule_ids or ())

    @admin.display(description="policy version")
    def version(self, obj):
        return f"defaults {obj.defaults_version} / user {obj.user_version}"

    @admin.display(description="answer")
    def answered(self, obj):
        answer = getattr(obj, "answer", None)
        return f"{answer.answer} ({answer.remember})" if answer is not None else "-"

    @admin.display(description="rules")
    def rule_refs(self, obj):
        from django.utils.html import format_html_join

        return (
            format_html_join(
                ", ", "{}", ((admin_link(PolicyRule, pk),) for pk in obj.rule_ids or ())
            )
            or "-"
        )

    @admin.display(description="answer")
    def answer_ref(self, obj):
        answer = getattr(obj, "answer", None)
        return (
            admin_link(PolicyAnswer, answer.pk, self.answered(obj)) if answer is not None else "-"
        )


@admin.register(PolicyAnswer)
class PolicyAnswerAdmin(SupportAdmin):
    read_only = True
    list_display = (
        "id",
        "user_ref",
        "capability",
        "answer",
        "remember",
        "rule_ref",
        "job_ref",
        "answered_at",
    )
    list_filter = ("answer", "remember")
    search_fields = ("user__username", "decision__capability")
    uuid_search_fields = ("id", "decision_id", "rule_id", "media_job_id")
    list_select_related = ("user", "decision")
    date_hierarchy = "answered_at"
    fields = (
        "id",
        "user_ref",
        "decision_ref",
        "capability",
        "answer",
        "remember",
        "rule_ref",
        "job_ref",
        "answered_at",
    )

    @admin.display(description="capability", ordering="decision__capability")
    def capability(self, obj):
        return obj.decision.capability

    @admin.display(description="decision")
    def decision_ref(self, obj):
        return admin_link(DecisionLog, obj.decision_id)

    @admin.display(description="rule created")
    def rule_ref(self, obj):
        return admin_link(PolicyRule, obj.rule_id)

    @admin.display(description="media job")
    def job_ref(self, obj):
        return admin_link(MediaJob, obj.media_job_id)


@admin.register(MediaJob)
class MediaJobAdmin(CapabilityColumn, SupportAdmin):
    read_only = True
    list_display = (
        "id",
        "user_ref",
        "capability_name",
        "requested_by",
        "status",
        "reason",
        "decision_effect",
        "admitted_at_version",
        "started_at_version",
        "created_at",
        "started_at",
        "finished_at",
    )
    list_filter = ("status", "capability", "decision_effect", "reason", "requested_by")
    search_fields = ("user__username", "idempotency_key", "capability__name")
    search_help_text = "A username, idempotency key or capability, or a job or decision id."
    uuid_search_fields = ("id", "decision_id", "start_decision_id", "conversation_id")
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    fields = (
        "id",
        "user_ref",
        "idempotency_key",
        "capability_name",
        "requested_by",
        "context_ref",
        "status",
        "reason",
        "decision_id",
        "decision_effect",
        "decision_reason",
        "decision_rule_ids",
        "admitted_at_version",
        "allowed_once",
        "start_decision_id",
        "started_at_version",
        "created_at",
        "started_at",
        "finished_at",
    )

    @admin.display(description="admitted at policy version")
    def admitted_at_version(self, obj):
        return f"{obj.admission_defaults_version}/{obj.admission_user_version}"

    @admin.display(description="started at policy version")
    def started_at_version(self, obj):
        if obj.start_defaults_version is None:
            return "-"
        return f"{obj.start_defaults_version}/{obj.start_user_version}"

    @admin.display(description="context")
    def context_ref(self, obj):
        parts = [f"character {obj.character.slug}" if obj.character_id else "no character"]
        if obj.conversation_id:
            parts.append(
                format_html("conversation {}", admin_link(Conversation, obj.conversation_id))
            )
        if obj.scene:
            parts.append(f"scene {obj.scene}")
        return format_html(", ".join(["{}"] * len(parts)), *parts)
