"""The shapes of the user, character and conversation operations (SPEC §10, C4)."""

from __future__ import annotations

from rest_framework import serializers

from config.api import PageOutput
from config.serializers import (
    CharacterSlugField,
    CleanCharField,
    PageQuery,
    StrictSerializer,
    UserRefField,
)


class UserPutInput(StrictSerializer):
    email = serializers.EmailField(
        required=False,
        allow_blank=True,
        help_text="The user's email address, kept with the account (optional; an empty string "
        "clears it).",
    )


class UserOutput(serializers.Serializer):
    ref = serializers.CharField(
        source="username",
        help_text="The user's ref: the runtime's own id for the person, "
        "used in every path and body that names the user.",
    )
    created_at = serializers.DateTimeField(
        source="date_joined", help_text="When the user was first created here."
    )


class CharacterPutInput(StrictSerializer):
    name = CleanCharField(max_length=200, help_text="The character's display name.")


class CharacterOutput(serializers.Serializer):
    slug = serializers.CharField(help_text="The character's slug: its id in paths and bodies.")
    name = serializers.CharField(help_text="The character's display name.")


class CharacterPageOutput(PageOutput):
    results = CharacterOutput(many=True, help_text="The characters of this page, by slug.")


class ConversationCreateInput(StrictSerializer):
    user = CleanCharField(max_length=150, help_text="The ref of the user who talks.")
    character = serializers.SlugField(
        max_length=100, help_text="The slug of the character the user talks with."
    )
    title = CleanCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="A title shown on the user's conversation list (optional).",
    )


class ConversationOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="The conversation's id.")
    user = serializers.CharField(source="user.username", help_text="The ref of the user who talks.")
    character = serializers.CharField(
        source="character.slug", help_text="The slug of the character the user talks with."
    )
    title = serializers.CharField(help_text="The conversation's title; empty when none was given.")
    created_at = serializers.DateTimeField(help_text="When the conversation was created.")
    last_seq = serializers.IntegerField(
        help_text="The `seq` of the conversation's newest message (0 before the first). "
        "Messages are numbered 1, 2, 3… in order, so `after_seq=last_seq-20` on the messages "
        "read answers the last 20."
    )


class ConversationPageOutput(PageOutput):
    results = ConversationOutput(
        many=True, help_text="The conversations of this page, newest first."
    )


class ConversationListQuery(PageQuery):
    user = UserRefField(help_text="The ref of the user whose conversations to list (required).")
    character = CharacterSlugField(
        required=False, help_text="Only the conversations with this character."
    )
