"""V5: what the OpenAPI document says of an event — each type's `data` its own schema, the
event a `oneOf` with `type` as discriminator — and of the webhooks that carry them (the
document's `webhooks` section, OpenAPI 3.1: one webhook per event type, its body that type's
event, with the Standard Webhooks signature headers and how to verify them)."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiResponse,
    OpenApiWebhook,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers

from . import outbox

# E1's states, as the API answers a memory's `state` (the events app reads no memory code).
MEMORY_STATES = (
    "active",
    "not-yet-valid",
    "expired",
    "forgotten",
    "superseded",
    "lower-precedence",
)
AUTHORITIES = ("model-inferred", "rule-extracted", "user-confirmed", "user-corrected")
LIST_NOTE = (
    "At most 1,000 ids, sorted; a longer list is cut there and carries `{name}_count` and "
    "`{name}_truncated: true` beside it (V5): read the tombstone for the rest."
)


def _ids(name: str, what: str) -> dict:
    """An id list and the members that say it was cut (V5)."""
    return {
        name: serializers.ListField(
            child=serializers.CharField(), help_text=f"{what} {LIST_NOTE.format(name=name)}"
        ),
        f"{name}_count": serializers.IntegerField(
            required=False, help_text=f"How many ids `{name}` has in all (only when cut)."
        ),
        f"{name}_truncated": serializers.BooleanField(
            required=False, help_text=f"`true` when `{name}` was cut at 1,000 ids."
        ),
    }


class EventScope(serializers.Serializer):
    """A scope as the API shapes it, with no null member and no scene's id (V5)."""

    kind = serializers.ChoiceField(
        choices=("user", "character", "conversation", "scene", "everywhere"),
        help_text="A memory scope's kind; `everywhere` for a forget of every scope.",
    )
    character = serializers.CharField(
        required=False, help_text="The character's slug (kind `character` only)."
    )
    conversation = serializers.CharField(
        required=False,
        help_text="The conversation's id (kinds `conversation` and `scene`; a scene's own id "
        "is the user's words and never in an event).",
    )


class MemoryCreatedData(serializers.Serializer):
    memory = serializers.UUIDField(help_text="The new record.")
    scope = EventScope(help_text="Where it applies.")
    version = serializers.IntegerField(help_text="Its version in its scoped key (W8).")
    authority = serializers.ChoiceField(choices=AUTHORITIES, help_text="Who said it (§2).")
    valid_from = serializers.DateTimeField(help_text="When it starts to hold.")
    valid_until = serializers.DateTimeField(
        allow_null=True, help_text="When it ends (a copy expires it by itself); null: open."
    )
    supersedes = serializers.UUIDField(allow_null=True, help_text="The record it supersedes.")


class MemoryChangedData(serializers.Serializer):
    memory = serializers.UUIDField(help_text="The record whose state a write changed.")
    state = serializers.ChoiceField(
        choices=MEMORY_STATES,
        help_text="Its E1 state after the change, in its own scope: `superseded` (by `by`), "
        "or for a retraction `expired` (`not-yet-valid` for a record that had not started).",
    )
    by = serializers.UUIDField(allow_null=True, help_text="The record that superseded it.")
    valid_until = serializers.DateTimeField(
        required=False, help_text="A retracted record's window end (W10)."
    )
    retracted_at = serializers.DateTimeField(
        required=False, help_text="When it was retracted (W10); only on a retraction."
    )


MemoryForgottenData = type(
    "MemoryForgottenData",
    (serializers.Serializer,),
    {
        "tombstone": serializers.UUIDField(help_text="The forget (`DELETE /tombstones/{id}`)."),
        "scope": EventScope(help_text="Where the forget applies."),
        **_ids("memories", "The records it purged."),
        **_ids("withheld_messages", "The messages it withholds (F6)."),
        **_ids("withheld_memories", "The user's other memories it withholds (F7.2)."),
        "forgotten_by": serializers.CharField(help_text="Who forgot: `user`, `support`, …"),
    },
)

TombstoneDeletedData = type(
    "TombstoneDeletedData",
    (serializers.Serializer,),
    {
        "tombstone": serializers.UUIDField(help_text="The forget undone."),
        **_ids("released_messages", "The messages no other forget withholds now."),
        **_ids("released_memories", "The memories no other forget withholds now."),
    },
)


class SettingsChangedData(serializers.Serializer):
    learn = serializers.BooleanField(help_text="Whether the companion learns new memories (I8).")
    use = serializers.BooleanField(help_text="Whether the companion uses memories (I8).")
    changed_by = serializers.CharField(help_text="Who changed them: `user`, `api`, …")


class PolicyChangedData(serializers.Serializer):
    policy_version = serializers.IntegerField(help_text="The new policy version (D7).")
    rules = serializers.ListField(child=serializers.CharField(), help_text="The rules touched.")


class ConversationDeletedData(serializers.Serializer):
    conversation = serializers.UUIDField(help_text="The conversation deleted.")


@extend_schema_field(
    {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
        "description": "Nothing: the event's `user` is the ref a copy erases (V1).",
    }
)
class UserDeletedData(serializers.DictField):
    """Nothing: the event's `user` is the ref a copy erases (V1)."""


DATA = {
    outbox.MEMORY_CREATED: MemoryCreatedData,
    outbox.MEMORY_CHANGED: MemoryChangedData,
    outbox.MEMORY_FORGOTTEN: MemoryForgottenData,
    outbox.TOMBSTONE_DELETED: TombstoneDeletedData,
    outbox.SETTINGS_CHANGED: SettingsChangedData,
    outbox.POLICY_CHANGED: PolicyChangedData,
    outbox.CONVERSATION_DELETED: ConversationDeletedData,
    outbox.USER_DELETED: UserDeletedData,
}


def _event_class(type_: str, data: type[serializers.Serializer]) -> type:
    name = "".join(part.title() for part in type_.split(".")) + "Event"
    return type(
        name,
        (serializers.Serializer,),
        {
            "id": serializers.CharField(
                help_text="`evt_<n>`: unique, the `webhook-id` of its deliveries."
            ),
            "type": serializers.ChoiceField(
                choices=(type_,), help_text="What changed; names the schema of `data`."
            ),
            "user": serializers.CharField(
                allow_null=True, help_text="The user ref; null for the product defaults."
            ),
            "occurred_at": serializers.DateTimeField(
                help_text="When the change was made: the record's own time."
            ),
            "data": data(help_text=f"The ids, states, versions and times of a `{type_}`."),
            "__doc__": f"A `{type_}` event (SPEC V1, V5).",
        },
    )


EVENT_CLASSES = {type_: _event_class(type_, data) for type_, data in DATA.items()}

# V5: how a receiver checks a delivery, with the standard library only; the webhooks'
# descriptions carry it word for word, and a test runs it on a real delivery.
VERIFY_PYTHON = """import base64
import hashlib
import hmac
import time


def verify(secret: str, headers: dict, body: bytes) -> bool:
    \"\"\"True when `body` is what the service sent (`headers` by lower-case name).\"\"\"
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    expected = "v1," + base64.b64encode(digest).decode()
    fresh = abs(time.time() - int(headers["webhook-timestamp"])) <= 300
    return fresh and any(
        hmac.compare_digest(expected, given)
        for given in headers["webhook-signature"].split()
    )"""

VERIFY = f"""Each delivery is a POST of the event as JSON, signed per Standard Webhooks with the
endpoint's secret (`whsec_…`, shown once when staff register the endpoint in the admin):

- `webhook-id`: the event's id (`evt_<n>`); a repeated delivery carries the same one, so drop
  repeats by it.
- `webhook-timestamp`: when this attempt was signed, in Unix seconds; refuse one far from your
  clock (five minutes here).
- `webhook-signature`: `v1,<base64 HMAC-SHA256>` of `{{webhook-id}}.{{webhook-timestamp}}.{{body}}`,
  keyed with the bytes of the secret's base64 part (after `whsec_`); several signatures are
  space-separated, and one that matches is enough.

Verify the raw body before parsing it, for example in Python with the standard library only:

```python
{VERIFY_PYTHON}
```

The `standardwebhooks` package checks the same: `Webhook(secret).verify(body, headers)`.
Answer 2xx within 5 s. Anything else is retried with backoff for 24 h, then the endpoint is
disabled; a 410 disables it at once (V3). Deliveries come at least once, in order per user."""


WEBHOOK_HEADERS = {
    "webhook-id": "The event's id (`evt_<n>`): the same on every retry.",
    "webhook-timestamp": "When this attempt was signed, in Unix seconds.",
    "webhook-signature": "`v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`, keyed with "
    "the secret's base64 part; several are space-separated.",
}

# Each event type's webhook: its summary (Swagger UI shows it beside the type) and the first
# words of its description (C6).
WHEN = {
    outbox.MEMORY_CREATED: (
        "A new memory record",
        "A new memory record was stored: a write, a correction or confirmation (which also "
        "sends `memory.changed` for the record it supersedes), something learned from a turn, "
        "or an import.",
    ),
    outbox.MEMORY_CHANGED: (
        "A record's state changed",
        "A write changed a memory record's state: a newer record superseded it, or it was "
        "retracted (its E1 state then, with `retracted_at`).",
    ),
    outbox.MEMORY_FORGOTTEN: (
        "A memory was forgotten",
        "A memory was forgotten: the tombstone, the records it purged, and the messages and "
        "memories it withholds from now on; delete your copies of them.",
    ),
    outbox.TOMBSTONE_DELETED: (
        "A forget was undone",
        "A forget was undone: the messages and memories that no other forget withholds now.",
    ),
    outbox.SETTINGS_CHANGED: (
        "The learn or use switch changed",
        "The user's learn or use switch changed (I8): whether the companion learns new "
        "memories and whether it uses them.",
    ),
    outbox.POLICY_CHANGED: (
        "The user's boundaries changed",
        "The user's boundary rules changed: the new policy version and the rules touched.",
    ),
    outbox.CONVERSATION_DELETED: (
        "A conversation was deleted",
        "A conversation was deleted with its messages; delete your copies of them.",
    ),
    outbox.USER_DELETED: (
        "A user was deleted",
        "A user was deleted: erase everything you hold for the ref in the event's `user` "
        "(the only thing the event carries).",
    ),
}


def _webhook(type_: str) -> OpenApiWebhook:
    summary, when = WHEN[type_]
    return OpenApiWebhook(
        name=type_,
        decorator=extend_schema(
            summary=summary,
            description=f"{when}\n\n{VERIFY}",
            request=EVENT_CLASSES[type_],
            responses={
                200: OpenApiResponse(description="Received: any 2xx answer within 5 s."),
                410: OpenApiResponse(description="Gone: the endpoint is disabled at once."),
            },
            tags=["events"],
        ),
    )


# V5: one webhook per event type, in the order of `outbox.EVENT_TYPES`
# (`SPECTACULAR_SETTINGS["WEBHOOKS"]`).
WEBHOOKS = [_webhook(type_) for type_ in outbox.EVENT_TYPES]


def postprocess(result, generator, request, public):
    """drf-spectacular postprocessing hook (V5): each webhook names the Standard Webhooks
    headers it is signed with (drf-spectacular carries no parameters into a webhook)."""
    for path_item in result.get("webhooks", {}).values():
        for operation in path_item.values():
            operation["parameters"] = [
                {"name": name, "in": "header", "required": True, "description": text}
                | {"schema": {"type": "string"}}
                for name, text in WEBHOOK_HEADERS.items()
            ]
    return result
