"""Events and webhooks in the admin (SPEC V3). Staff register endpoints here: the URL is
checked like at every delivery (https, public addresses: SSRF), and the signing secret is
shown once, on the page after the endpoint was created. Every delivery lists its attempts
(status, latency, error — never a header, a body or a secret) and can be sent again; an
endpoint disabled after a 410 or the give-up window shows why and can be enabled again.
Events carry ids, states, versions and times only (V1): nothing here is private text."""

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html

from events import delivery as deliveries
from events.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from events.outbox import EVENT_TYPES
from events.webhooks import endpoint_change, endpoint_create, url_refusal
from support.admin.base import SupportAdmin


class EndpointForm(forms.ModelForm):
    url = forms.URLField(
        max_length=500,
        assume_scheme="https",
        help_text="https, resolving to public addresses (checked again at each delivery).",
    )
    event_types = forms.MultipleChoiceField(
        choices=[(t, t) for t in EVENT_TYPES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None checked: every type.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("url", "event_types", "user_ref", "description")
        labels = {"user_ref": "user"}
        help_texts = {"user_ref": "A user ref: only this user's events. Empty: every user's."}

    def clean_url(self):
        url = self.cleaned_data["url"]
        refusal = url_refusal(url)
        if refusal:
            raise forms.ValidationError(refusal)
        return url


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(SupportAdmin):
    form = EndpointForm
    list_display = ("url", "types", "user_ref", "enabled", "disabled_reason", "created_at")
    list_filter = ("enabled",)
    readonly_fields = ("enabled", "disabled_at", "disabled_reason", "created_at")
    actions = ["enable_again"]

    @admin.display(description="event types")
    def types(self, obj):
        return ", ".join(obj.event_types) or "all"

    def save_model(self, request, obj, form, change):
        if change:
            endpoint_change(
                endpoint=obj,
                url=obj.url,
                event_types=form.cleaned_data["event_types"],
                user_ref=obj.user_ref,
                description=obj.description,
            )
            return
        endpoint, secret = endpoint_create(
            url=obj.url,
            event_types=form.cleaned_data["event_types"],
            user_ref=obj.user_ref,
            description=obj.description,
        )
        obj.pk, obj.secret, obj.created_at = endpoint.pk, endpoint.secret, endpoint.created_at
        self.message_user(
            request,
            format_html(
                "The signing secret of this endpoint, shown only this once: <code>{}</code>", secret
            ),
            messages.WARNING,
        )

    @admin.action(description="Enable the selected endpoints again", permissions=["change"])
    def enable_again(self, request, queryset):
        for endpoint in queryset:
            deliveries.enable(endpoint)
        self.message_user(request, f"Enabled {queryset.count()} endpoint(s).", messages.SUCCESS)


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    fields = ("at", "status_code", "latency_ms", "error")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Delivery)
class DeliveryAdmin(SupportAdmin):
    _delivery = ("event_ref", "event_type", "endpoint", "user", "status", "attempts")
    list_display = (*_delivery, "delivered_at")
    list_filter = ("status",)
    list_select_related = ("event", "lane__endpoint")
    fields = (*_delivery, "first_attempt_at", "delivered_at")
    readonly_fields = fields
    inlines = [AttemptInline]
    actions = ["send_again"]

    def has_add_permission(self, request, *args):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="event")
    def event_ref(self, obj):
        return f"evt_{obj.event_id}"

    @admin.display(description="type")
    def event_type(self, obj):
        return obj.event.type

    @admin.display(description="endpoint")
    def endpoint(self, obj):
        return obj.lane.endpoint.url

    @admin.display(description="user")
    def user(self, obj):
        return obj.lane.user_ref

    @admin.action(description="Send the selected deliveries again", permissions=["change"])
    def send_again(self, request, queryset):
        count = deliveries.resend(queryset)
        self.message_user(request, f"{count} deliveries will be sent again.", messages.SUCCESS)


@admin.register(Event)
class EventAdmin(SupportAdmin):
    read_only = True
    list_display = ("__str__", "user_ref", "occurred_at")
    list_filter = ("type",)
    search_fields = ("user_ref",)
    fields = ("type", "user_ref", "occurred_at", "data")
