"""The snapshot's sections and a fingerprint of what a user holds, for the export, import
and delete tests (SPEC §9)."""

from conversations.models import Conversation, Turn

SNAPSHOT_KEYS = {
    "format",
    "exported_at",
    "user",
    "characters",
    "conversations",
    "messages",
    "turns",
    "memories",
    "tombstones",
    "policy_rules",
    "policy_version",
    "keys",
    "reveals",
}


def fingerprint(api, user):
    """Resolver answers for every context of the user, and the plan hash of every turn."""
    out = {}
    for conv in Conversation.objects.filter(user=user).select_related("character"):
        scenes = set(Turn.objects.filter(conversation=conv).values_list("scene", flat=True)) | {
            None
        }
        for scene in sorted(scenes, key=str):
            ctx = {
                "user": user.username,
                "character": conv.character.slug,
                "conversation": str(conv.pk),
                "now": "2030-01-01T00:00:00Z",
            }
            if scene:
                ctx["scene"] = scene
            body = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json").json()
            body.pop("trace", None)
            out[(str(conv.pk), scene)] = body
    for turn_id in (
        Turn.objects.filter(user=user).order_by("created_at").values_list("id", flat=True)
    ):
        plan = api.get(
            f"/api/v1/turns/{turn_id}/prompt-plan",
            {"budget": 1200, "now": "2030-01-01T00:00:00Z", "capabilities": "tone.playful"},
        ).json()
        if plan.get("code") == "message_withheld":  # F7.1: its own message is withheld
            out[str(turn_id)] = plan["code"]
            continue
        out[str(turn_id)] = (plan["plan_hash"], [d["effect"] for d in plan["policy"]])
    return out
