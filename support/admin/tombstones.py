"""Tombstones in the admin (SPEC F1–F7): which key was forgotten — never a value —, where, at
whose request and when, with how many messages (F6) and other memories (F7.2) each forget
withholds. Read-only; the key's free part is masked outside a reveal of its user (S1)."""

from django.contrib import admin

from memory.models import Tombstone
from memory.withholding import withheld_count_annotation, withheld_memory_count_annotation
from support.admin.base import set_or_not_filter
from support.admin.memory import SlotAdmin

ValueLevelFilter = set_or_not_filter(
    "forget level",
    "value_hash",
    {"value": ("one value (many key)", False), "key": ("whole key", True)},
    "level",
)


class EverywhereFilter(admin.SimpleListFilter):
    title = "scope"
    parameter_name = "everywhere"

    def lookups(self, request, model_admin):
        return [("yes", "everywhere (*)"), ("no", "one scope")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(scope_id="*")
        if self.value() == "no":
            return queryset.exclude(scope_id="*")
        return queryset


@admin.register(Tombstone)
class TombstoneAdmin(SlotAdmin):
    """F1: a tombstone holds no value, and its value hash is not shown either (it is a keyed
    hash, useless to read and not for copying around)."""

    row_label = "forgotten"
    list_display = (
        "key_ref",
        "user_ref",
        "scope_id",
        "value_level",
        "forgotten_by",
        "forgotten_at",
        "withheld_messages",
        "withheld_memories",
    )
    list_filter = (ValueLevelFilter, EverywhereFilter, "forgotten_by")
    uuid_search_fields = ("id",)
    date_hierarchy = "forgotten_at"
    fields = (
        "id",
        "user_ref",
        "key_ref",
        "scope_id",
        "value_level",
        "forgotten_by",
        "forgotten_at",
        "blocks_sources_before",
        "withheld_messages",
        "withheld_memories",
    )

    def annotations(self):
        return {
            "_withheld": withheld_count_annotation(),
            "_withheld_memories": withheld_memory_count_annotation(),
        }

    @admin.display(description="messages withheld", ordering="_withheld")
    def withheld_messages(self, obj):
        """F6: how many messages the forget withholds (a count: never which words)."""
        return obj._withheld

    @admin.display(description="memories withheld", ordering="_withheld_memories")
    def withheld_memories(self, obj):
        """F7.2: how many of the user's other memories the forget withholds (a count: never
        which values)."""
        return obj._withheld_memories
