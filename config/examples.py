"""An example request of every operation that takes a body (SPEC §10), shown by the browsable
docs beside the problem examples (`config.problems`). The schema's postprocessing
(`config.schema.postprocess`) puts each on its operation; a test checks that every example
is valid by the schema and that the server accepts it."""

CONVERSATION = "3f2b8c1e-7d4a-4b6e-9c0d-1a2b3c4d5e6f"
DECISION = "8a7b6c5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d"
CONTEXT = {"user": "sam", "character": "captain-rowan", "conversation": CONVERSATION}

REQUEST_EXAMPLES: dict[str, tuple[str, dict]] = {
    "user_put": ("A user with an email", {"email": "sam@example.com"}),
    "character_put": ("A character's name", {"name": "Captain Rowan"}),
    "conversation_create": (
        "A conversation with a character",
        {"user": "sam", "character": "captain-rowan", "title": "Night watch"},
    ),
    "turn_create": (
        "A turn planned in the same request",
        {
            "turn_key": "turn-1",
            "content": "My cat's name is Miso.",
            "plan": {"budget": 800, "capabilities": ["tone.playful"], "memory_order": "relevance"},
        },
    ),
    "turn_reply": ("The companion's reply", {"content": "Miso is a lovely name."}),
    "memory_assert": (
        "A fact the user confirmed",
        {
            "user": "sam",
            "key": "pet.name",
            "value": "Miso",
            "scope": {"kind": "user"},
            "authority": "user-confirmed",
            "confidence": 1.0,
            "idempotency_key": "assert-1",
        },
    ),
    "memory_confirm": ("No fields", {}),
    "memory_correct": ("The right value", {"value": "Mochi"}),
    "memory_retract": ("No fields", {}),
    "memory_forget": ("This scope only", {"everywhere": False, "whole_key": False}),
    "memory_resolve": ("What a conversation may use", {"context": CONTEXT, "keys": ["pet.name"]}),
    "memory_remember": ("Learn from a text", {"context": CONTEXT, "text": "I live in Oslo."}),
    "memory_settings_put": ("Stop using memories in prompts", {"use": False}),
    "policy_decide": (
        "May the companion speak?",
        {"context": CONTEXT, "capability": "media.voice", "requested_by": "user"},
    ),
    "policy_rules_create": (
        "Never playful with this character",
        {
            "user": "sam",
            "capability": "tone.playful",
            "effect": "deny",
            "source": "explicit-user",
            "scope": {"kind": "character", "character": "captain-rowan"},
        },
    ),
    "policy_rules_revoke": ("No fields", {}),
    "policy_answers_create": (
        "Allow it for this character",
        {"decision_id": DECISION, "answer": "allow", "remember": "character"},
    ),
    "media_jobs_create": (
        "An image for this conversation",
        {
            "context": CONTEXT,
            "capability": "media.image",
            "requested_by": "user",
            "idempotency_key": "image-1",
        },
    ),
    "media_jobs_start": ("No fields", {}),
    "media_jobs_complete": ("No fields", {}),
    "user_import": (
        "The smallest snapshot",
        {"format": "companion-memory/3", "user": {"ref": "sam"}},
    ),
}


# C1: the rules between fields that a schema cannot state, one sentence each; the 400 names
# the field.
CROSS_FIELD = {
    "memory_assert": "A window ends after it starts: `valid_until` must be later than "
    "`valid_from` (now when absent), else 400 naming `valid_until`.",
    "policy_rules_create": "A rule without `user` is a product default: source "
    "`product-default` and a global or character scope; a user's rule "
    "has another source (400 naming `source` or `scope.kind`); "
    "`valid_until` must be later than `valid_from`.",
    "media_jobs_create": "Only a media capability (`media.*`) makes a job (400 naming "
    "`capability`).",
    "policy_answers_create": "Only an `ask` decision is answered, `remember` needs the part of "
    "the decision's context it names, and `media_job` must be for the "
    "decision's capability (400 naming the field).",
    "user_import": "The snapshot must be this user's: a body whose `user.ref` differs from "
    "the `{user_ref}` in the path is refused (400 naming `user.ref`). Rows must "
    "reference rows of the snapshot or the catalog.",
}


def document(result: dict) -> None:
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            name = operation.get("operationId", "")
            if name in CROSS_FIELD:
                operation["description"] = " ".join(
                    filter(None, [operation.get("description"), CROSS_FIELD[name]])
                )
            example = REQUEST_EXAMPLES.get(name)
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if example is not None and body is not None:
                summary, value = example
                body["examples"] = {"example": {"summary": summary, "value": value}}
