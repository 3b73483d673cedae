"""The key registry in the admin: catalog data, so it stays editable, but a key's cardinality
cannot change once records use it (SPEC §0), and a key is deleted only from its own page,
where its use is checked."""

from django import forms
from django.contrib import admin
from django.db.models import Exists, OuterRef

from memory.domain import valid_key
from memory.models import KeyDefinition, MemoryRecord
from support.admin.base import SupportAdmin


class KeyDefinitionForm(forms.ModelForm):
    class Meta:
        model = KeyDefinition
        fields = ("key", "cardinality", "label", "template", "pinned")

    def clean_key(self):
        key = self.cleaned_data["key"]
        if not valid_key(key):
            raise forms.ValidationError(
                "1–120 characters of a-z, 0-9, '_', '-' and '.', with no leading, trailing or "
                "double dot."
            )
        return key

    def clean(self):
        """SPEC §0: a key's cardinality cannot change once records use it. An unregistered key
        is `one`, so registering a used key as `many` is a change too."""
        data = super().clean()
        key = data.get("key") or self.instance.key  # the key is read-only once registered
        cardinality = data.get("cardinality")
        if not key or not cardinality:
            return data
        current = (
            KeyDefinition.objects.filter(pk=key).values_list("cardinality", flat=True).first()
            or "one"
        )
        if cardinality != current and MemoryRecord.objects.filter(key=key).exists():
            self.add_error(
                "cardinality",
                forms.ValidationError(
                    "Memories already use this key, so its cardinality cannot change from "
                    "%(current)s.",
                    params={"current": current},
                    code="cardinality_in_use",
                ),
            )
        return data


@admin.register(KeyDefinition)
class KeyDefinitionAdmin(SupportAdmin):
    form = KeyDefinitionForm
    list_display = ("key", "label", "cardinality", "pinned", "in_use")
    list_filter = ("cardinality",)
    search_fields = ("key", "label")

    def annotations(self):
        return {"_in_use": Exists(MemoryRecord.objects.filter(key=OuterRef("key")))}

    @admin.display(description="used by memories", boolean=True, ordering="_in_use")
    def in_use(self, obj):
        return obj._in_use

    def get_readonly_fields(self, request, obj=None):
        # The key is the primary key: editing it would register another key.
        return ("key",) if obj is not None else ()

    def has_delete_permission(self, request, obj=None):
        # Deleting a used `many` key would make it `one`: a cardinality change (SPEC §0).
        if obj is not None and MemoryRecord.objects.filter(key=obj.key).exists():
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # per key, from its page, where usage is checked
        return actions
