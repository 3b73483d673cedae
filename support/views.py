"""The explain view (`/admin/support/explain/`): for a user, character, conversation, scene and
time, what the resolver and the policy engine say, through `support.services.support_explain`."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse

from config.errors import ValidationError as DomainValidationError
from conversations.models import Conversation
from memory.models import MemoryRecord
from policy.models import PolicyRule

from . import services as support
from .display import admin_link, masked
from .forms import ExplainForm


def explain_view(request):
    """Pick a user, character, conversation, scene and time; see the resolver's result (counts,
    every record id with its step, reason and detail, the prompt projection) and the policy
    engine's per capability (effect, reason, rule ids, each rule's explain reason). Values only
    with `view_private_text`, and then logged. Writes nothing else (no decision-log rows)."""
    if not request.user.has_perm(support.EXPLAIN_PERMISSION):
        raise PermissionDenied
    reveal = support.can_view_private(request.user)
    data = None
    if "user" in request.GET:
        data = request.GET.copy()  # a link may name only the user: the rest has defaults
        data.setdefault("requested_by", "assistant")
    form = ExplainForm(data)
    result = None
    conversations = []
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        try:
            result = support.support_explain(
                user=data["user"], character=data["character"] or None,
                conversation=str(data["conversation"]) if data["conversation"] else None,
                scene=data["scene"] or None, now=data["now"],
                capabilities=data["capabilities"] or [c for c, _ in form.fields["capabilities"].choices],
                requested_by=data["requested_by"], keys=data["keys"] or None,
            )
        except DomainValidationError as error:
            for name, problems in (error.errors or {None: [error.detail]}).items():
                field = name.split(".", 1)[1] if name and name.startswith("context.") else None
                for problem in problems:
                    form.add_error(field if field in form.fields else None, problem)
        if result is not None:
            # Ids to pick from, never titles: the conversation title is the user's own text.
            conversations = list(
                Conversation.objects.filter(user=result.context.user)
                .select_related("character").order_by("-created_at")
                .values_list("pk", "character__slug", "created_at")[:50]
            )
    rows = []
    if result is not None:
        for item in result.records:
            record = item.record
            value = record.value if reveal else None
            rows.append({
                "item": item, "record": record,
                "link": admin_link(MemoryRecord, record.id, record.id),
                "value": value if value else ("" if reveal else masked()),
                "erased": record.status == "forgotten",
            })
        if reveal:
            support.reveals_record(staff=request.user, view="explain", objects=[
                (MemoryRecord, item.record.id, result.context.user.pk)
                for item in result.records if item.record.value
            ])
    context = {
        **admin.site.each_context(request),
        "title": "Explain a context",
        "subtitle": None,
        "form": form,
        "result": result,
        "rows": rows,
        "reveal": reveal,
        "conversations": conversations,
        "rule_opts": PolicyRule._meta,
        "memory_opts": MemoryRecord._meta,
        "media": form.media,
    }
    return TemplateResponse(request, "admin/support/explain.html", context)
