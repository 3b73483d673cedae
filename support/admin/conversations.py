"""Characters, conversations, turns and messages in the admin, for support staff.

Message content and conversation titles are the user's own words: shown only inside a reveal
of their user (SPEC §13 S1; each page that shows them is logged), searchable and filterable
only there, and a conversation is named by its id, never by its title. Conversations, turns
and messages are read-only (the services own them). Characters are catalog data and
editable, through the same service as `PUT /characters/{slug}`.
"""

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import F, OuterRef, Q, Subquery
from django.utils.html import format_html, format_html_join

from conversations.models import Character, Conversation, Message, Turn
from conversations.services import character_put
from memory.models import MemoryRecord, MemorySource
from memory.withholding import withheld_exists
from support import services as support
from support.admin.base import (
    CatalogAdmin,
    SupportAdmin,
    count_column,
    count_of,
    private_text_columns,
)
from support.display import admin_link, explain_turn_url, explain_url, plan_rows, reveal_url
from support.reveals import reveal_page_log


class CharacterForm(forms.ModelForm):
    class Meta:
        model = Character
        fields = ("slug", "name")


@admin.register(Character)
class CharacterAdmin(CatalogAdmin):
    """The slug is the character's identity in scope ids and the API; conversations, memories
    and rules refer to characters (PROTECT), so none is retired here."""

    form = CharacterForm
    key_fields = ("slug",)
    readonly_fields = ("created_at",)
    list_display = ("slug", "name", "n_conversations", "created_at")
    search_fields = ("slug", "name")
    date_hierarchy = "created_at"

    def annotations(self):
        return {"_conversations": count_of(Conversation, "character")}

    n_conversations = count_column("_conversations", "conversations")

    def save_model(self, request, obj, form, change):
        character, _ = character_put(slug=obj.slug, name=obj.name)
        obj.pk, obj.created_at = character.pk, character.created_at


@admin.register(Conversation)
class ConversationAdmin(SupportAdmin):
    read_only = True
    private_fields = ("title",)
    uuid_search_fields = ("id",)
    list_display = (
        "id",
        "user_ref",
        "character_slug",
        "title_preview",
        "n_messages",
        "n_turns",
        "created_at",
    )
    list_filter = (("character", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("user__username", "character__slug")
    search_help_text = "A username or character slug, or a conversation id."
    list_select_related = ("user", "character")
    date_hierarchy = "created_at"
    fields = (
        "id",
        "user_ref",
        "character_slug",
        "title_full",
        "created_at",
        "last_seq",
        "n_messages",
        "n_turns",
        "related",
    )

    def annotations(self):
        return {
            "_messages": count_of(Message, "conversation"),
            "_turns": count_of(Turn, "conversation"),
        }

    def object_label(self, obj):
        return f"Conversation {obj.pk}"  # never the title: it is the user's own text

    @admin.display(description="character", ordering="character__slug")
    def character_slug(self, obj):
        return obj.character.slug

    title_preview, title_full = private_text_columns("title")

    n_messages = count_column("_messages", "messages")
    n_turns = count_column("_turns", "turns")

    @admin.display(description="see also")
    def related(self, obj):
        from django.urls import reverse

        messages_url = reverse("admin:conversations_message_changelist") + f"?conversation={obj.pk}"
        turns_url = reverse("admin:conversations_turn_changelist") + f"?conversation={obj.pk}"
        memory_url = reverse("admin:memory_memoryrecord_changelist") + f"?conversation={obj.pk}"
        explain = explain_url(user=obj.user.get_username(), conversation=str(obj.pk))
        return format_html(
            '<a href="{}">messages</a> · <a href="{}">turns</a> · <a href="{}">memories scoped '
            "here</a>"
            ' · <a href="{}">explain this context</a>',
            messages_url,
            turns_url,
            memory_url,
            explain,
        )


def explain_turn_link(turn_id, text="Explain"):
    """One click to the explain view for a turn's conversation, scene and plan time."""
    if not turn_id:
        return "-"
    return format_html('<a href="{}" class="explain-turn">{}</a>', explain_turn_url(turn_id), text)


class ConversationPartAdmin(SupportAdmin):
    """A conversation's turns and messages: read-only (the services own them), browsed by
    their time, each naming its conversation by id, never by its title."""

    read_only = True
    list_select_related = ("user",)
    date_hierarchy = "created_at"

    @admin.display(description="conversation")
    def conversation_ref(self, obj):
        return admin_link(Conversation, obj.conversation_id, obj.conversation_id)


@admin.register(Turn)
class TurnAdmin(ConversationPartAdmin):
    """A turn keeps ids, outcomes and the last plan's ids and hash (never text, SPEC §7). Its
    page reads the plan back as tables of keys and labels (values and whole keys only inside a
    reveal of the turn's user, and then the page is logged), and one click explains the turn."""

    change_form_template = "admin/support/turn_change_form.html"
    uuid_search_fields = ("id", "conversation_id", "user_message_id", "reply_message_id")
    list_display = (
        "turn_key",
        "user_ref",
        "conversation_ref",
        "scene",
        "status",
        "user_seq",
        "reply_seq",
        "planned",
        "explain",
        "created_at",
    )
    list_filter = ("status", ("plan_hash", admin.EmptyFieldListFilter))
    search_fields = ("user__username", "turn_key", "scene")
    search_help_text = "A username, turn key or scene, or a turn, conversation or message id."
    fields = (
        "id",
        "user_ref",
        "conversation_ref",
        "turn_key",
        "scene",
        "status",
        "user_message_ref",
        "reply_message_ref",
        "created_at",
        "extracted",
        "plan_hash",
        "explain_this",
    )

    def annotations(self):
        return {"_user_seq": F("user_message__seq"), "_reply_seq": F("reply_message__seq")}

    def change_view(self, request, object_id, form_url="", extra_context=None):
        turn = self.get_object(request, unquote(object_id))
        if turn is not None and self.has_view_or_change_permission(request, turn):
            reveal = self.reveal_subject(request) == turn.user_id
            plan = support.turn_plan(turn, reveal=reveal)
            link = (
                reveal_url(turn.user.get_username(), request.path)
                if self.may_reveal(request)
                else ""
            )
            if reveal:
                reveal_page_log(
                    reveal=self.reveal_of(request),
                    staff=request.user,
                    view="change",
                    model=Turn,
                    object_id=turn.pk,
                    shown=plan.shown,
                )
            extra_context = {
                **(extra_context or {}),
                "plan": plan,
                "plan_rows": plan_rows(plan, reveal_link="" if reveal else link),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description="explain")
    def explain(self, obj):
        return explain_turn_link(obj.pk)

    @admin.display(description="why did the companion say that?")
    def explain_this(self, obj):
        return explain_turn_link(obj.pk, "Explain this turn: its conversation, scene and plan time")

    @admin.display(description="user message", ordering="_user_seq")
    def user_seq(self, obj):
        return admin_link(Message, obj.user_message_id, f"#{obj._user_seq}")

    @admin.display(description="reply", ordering="_reply_seq")
    def reply_seq(self, obj):
        return (
            admin_link(Message, obj.reply_message_id, f"#{obj._reply_seq}")
            if obj.reply_message_id
            else "-"
        )

    @admin.display(description="planned", boolean=True)
    def planned(self, obj):
        return bool(obj.plan_hash)

    @admin.display(description="user message")
    def user_message_ref(self, obj):
        return admin_link(Message, obj.user_message_id, f"#{obj._user_seq} ({obj.user_message_id})")

    @admin.display(description="reply")
    def reply_message_ref(self, obj):
        return self.reply_seq(obj)


@admin.register(Message)
class MessageAdmin(ConversationPartAdmin):
    private_fields = ("content",)
    uuid_search_fields = ("id", "conversation_id")
    list_display = (
        "seq",
        "user_ref",
        "role",
        "content_preview",
        "withheld",
        "conversation_ref",
        "explain",
        "created_at",
    )
    list_filter = ("role",)
    search_fields = ("user__username",)
    search_help_text = "A username, or a message or conversation id."
    fields = (
        "id",
        "user_ref",
        "conversation_ref",
        "seq",
        "role",
        "created_at",
        "content_full",
        "withheld",
        "turn_ref",
        "explain",
        "memory_refs",
    )

    def get_queryset(self, request):
        # The message's turn (it made the turn, or it is the turn's reply), in the same query.
        turn = (
            Turn.objects.filter(user=OuterRef("user"))
            .filter(Q(user_message=OuterRef("pk")) | Q(reply_message=OuterRef("pk")))
            .values("pk")[:1]
        )
        return (
            super()
            .get_queryset(request)
            .annotate(_turn=Subquery(turn), _withheld=withheld_exists())
        )

    @admin.display(description="withheld", boolean=True)
    def withheld(self, obj):
        """F6: a forget withholds it from the companion (the count of forgets is on the
        tombstones; which words matched is never shown)."""
        return bool(getattr(obj, "_withheld", False))

    @admin.display(description="explain")
    def explain(self, obj):
        return explain_turn_link(getattr(obj, "_turn", None))

    content_preview, content_full = private_text_columns("content")

    @admin.display(description="turn")
    def turn_ref(self, obj):
        turn = getattr(obj, "_turn", None)
        return admin_link(Turn, turn) if turn else "-"

    @admin.display(description="memories derived from it")
    def memory_refs(self, obj):
        ids = MemorySource.objects.filter(message_id=obj.pk).values_list("memory_id", flat=True)
        return format_html_join(", ", "{}", ((admin_link(MemoryRecord, pk),) for pk in ids)) or "-"
