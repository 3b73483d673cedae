"""What spans an export file's rows (SPEC §9): unique ids and unique constraints within the
file, references that resolve inside it or to the catalog, and the F6 links between
tombstones and the messages they withhold. Errors name the path of the field."""

from __future__ import annotations

import re

from config.serializers import SCENE_MAX
from conversations.models import Character
from memory.portability import memory_scope_id
from policy.models import Capability

FORMAT = "companion-memory/3"
# The formats an import reads. `/1` carries no withholding links (F6) and imports with none;
# `/2` carries the message links but no memory links (F7.2) and imports with none of those.
FORMATS = ("companion-memory/1", "companion-memory/2", FORMAT)
MESSAGE_LINKS = ("companion-memory/2", FORMAT)  # the formats that carry F6's links
MEMORY_LINKS = (FORMAT,)  # the formats that carry F7.2's links


def scope_id_error(scope_id: str, ref: str | None, *, allow_everywhere: bool) -> str | None:
    """Why `scope_id` is not a scope id (SPEC §1) of the user `ref`, or None."""
    if allow_everywhere and scope_id == "*":
        return None
    kind, _, rest = scope_id.partition(":")
    if kind == "user":
        return None if ref is None or rest == ref else "Not this user's scope."
    if kind == "character":
        owner, _, slug = rest.rpartition(":")
        if ref is not None and owner != ref:
            return "Not this user's scope."
        return None if re.fullmatch(r"[-a-zA-Z0-9_]{1,100}", slug) else "Not a character slug."
    if kind in ("conversation", "scene"):
        conversation, _, scene = rest.partition(":")
        if not re.fullmatch(
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", conversation
        ):
            return "Not a conversation id."
        if kind == "conversation":
            return None if not scene else "Not a scope id."
        return None if 0 < len(scene) <= SCENE_MAX else f"A scene id of 1–{SCENE_MAX} characters."
    return "Not a scope id (user:, character:, conversation: or scene:)."


# ---------------------------------------------------------------------------------------------
# What spans rows


def _first_in_cycle(edges: dict) -> set:
    """The nodes of `edges` (node → the node it supersedes) that lie on a cycle. Linear: each
    node is walked once."""
    state: dict = {}
    on_cycle: set = set()
    for start in edges:
        path = []
        node = start
        while node is not None and node in edges and node not in state:
            state[node] = "walking"
            path.append(node)
            node = edges[node]
        if node is not None and state.get(node) == "walking":
            on_cycle.update(path[path.index(node) :])
        for visited in path:
            state[visited] = "done"
    return on_cycle


def check_references(s: dict) -> dict[str, list[str]]:
    """Unique ids and unique constraints within the export file, and references that resolve
    inside it (or, for characters and capabilities, to the catalog). Paths name the field."""
    errors: dict[str, list[str]] = {}
    ref = s["user"]["ref"]

    def err(path: str, message: str) -> None:
        errors.setdefault(path, []).append(message)

    def unique(section: str, field: str, key) -> dict:
        seen: dict = {}
        for i, row in enumerate(s[section]):
            k = key(row)
            if k is None:
                continue
            if k in seen:
                err(f"{section}.{i}.{field}", f"Duplicate: {section}.{seen[k]} has the same.")
            else:
                seen[k] = i
        return seen

    # The catalog: characters (the file's, or stored) and capabilities (stored).
    unique("characters", "slug", lambda c: c["slug"])
    named = {c["character"] for c in s["conversations"]}
    named |= {m["scope"].get("character") for m in s["memories"]} | {
        r["scope"].get("character") for r in s["policy_rules"]
    }
    named |= {j["character"] for j in s["media_jobs"]}
    named.discard(None)
    slugs = {c["slug"] for c in s["characters"]}
    slugs |= set(Character.objects.filter(slug__in=named - slugs).values_list("slug", flat=True))
    capabilities = set(Capability.objects.values_list("name", flat=True))

    def character(path: str, slug) -> None:
        if slug is not None and slug not in slugs:
            err(path, "Unknown character: neither in the snapshot nor stored here.")

    def capability(path: str, name: str) -> None:
        if name not in capabilities:
            err(path, "Unknown capability.")

    unique("keys", "key", lambda k: k["key"])

    # Conversations, messages, turns.
    unique("conversations", "id", lambda c: c["id"])
    conversations = {str(c["id"]): c for c in s["conversations"]}
    for i, c in enumerate(s["conversations"]):
        character(f"conversations.{i}.character", c["character"])

    def conversation(path: str, value) -> None:
        if value is not None and str(value) not in conversations:
            err(path, "Not a conversation of this snapshot.")

    unique("messages", "id", lambda m: m["id"])
    unique("messages", "seq", lambda m: (m["conversation"], m["seq"]))
    messages = {str(m["id"]): m for m in s["messages"]}
    for i, m in enumerate(s["messages"]):
        conversation(f"messages.{i}.conversation", m["conversation"])

    unique("turns", "id", lambda t: t["id"])
    unique("turns", "turn_key", lambda t: (t["conversation"], t["turn_key"]))
    unique("turns", "user_message", lambda t: t["user_message"])
    unique("turns", "reply_message", lambda t: t.get("reply_message"))
    for i, t in enumerate(s["turns"]):
        conversation(f"turns.{i}.conversation", t["conversation"])
        for field, role in (("user_message", "user"), ("reply_message", "assistant")):
            message = t.get(field)
            if message is None:
                continue
            found = messages.get(str(message))
            if found is None or found["conversation"] != t["conversation"] or found["role"] != role:
                err(
                    f"turns.{i}.{field}",
                    f"Not a {role} message of this turn's conversation in the snapshot.",
                )

    # Memories.
    unique("memories", "id", lambda m: m["id"])
    unique(
        "memories", "version", lambda m: (memory_scope_id(ref, m["scope"]), m["key"], m["version"])
    )
    memories = {m["id"]: m for m in s["memories"]}
    for i, m in enumerate(s["memories"]):
        scope = m["scope"]
        character(f"memories.{i}.scope.character", scope.get("character"))
        conversation(f"memories.{i}.scope.conversation", scope.get("conversation"))
        if len(set(m["sources"])) != len(m["sources"]):
            err(f"memories.{i}.sources", "Each message at most once.")
        for j, source in enumerate(m["sources"]):
            if str(source) not in messages:
                err(f"memories.{i}.sources.{j}", "Not a message of this snapshot.")
        target = m.get("supersedes")
        if target is not None:
            found = memories.get(target)
            if found is None:
                err(f"memories.{i}.supersedes", "Not a memory of this snapshot.")
            elif (found["key"], memory_scope_id(ref, found["scope"])) != (
                m["key"],
                memory_scope_id(ref, scope),
            ):
                err(
                    f"memories.{i}.supersedes",
                    "A memory supersedes one of its own slot (same key and scope).",
                )
    looped = _first_in_cycle({m["id"]: m.get("supersedes") for m in s["memories"]})
    for i, m in enumerate(s["memories"]):
        if m["id"] in looped:
            err(f"memories.{i}.supersedes", "Supersedes edges form a cycle.")

    # Tombstones, retractions, idempotency records.
    unique("tombstones", "id", lambda t: t["id"])
    for section in ("tombstones", "retractions"):
        for i, row in enumerate(s[section]):
            problem = scope_id_error(row["scope"], ref, allow_everywhere=section == "tombstones")
            if problem:
                err(f"{section}.{i}.scope", problem)
    _check_withholding(s, messages, err)
    _check_memory_links(s, err)
    unique("idempotency", "key", lambda r: r["key"])
    for i, r in enumerate(s["idempotency"]):
        if r.get("record") is not None and r["record"] not in memories:
            err(f"idempotency.{i}.record", "Not a memory of this snapshot.")

    # Policy.
    unique("policy_rules", "id", lambda r: r["id"])
    unique("policy_rules", "supersedes", lambda r: r.get("supersedes"))
    rules = {r["id"] for r in s["policy_rules"]}
    for i, r in enumerate(s["policy_rules"]):
        capability(f"policy_rules.{i}.capability", r["capability"])
        character(f"policy_rules.{i}.scope.character", r["scope"].get("character"))
        conversation(f"policy_rules.{i}.scope.conversation", r["scope"].get("conversation"))
        if r.get("supersedes") is not None and r["supersedes"] not in rules:
            err(f"policy_rules.{i}.supersedes", "Not a rule of this snapshot.")
    looped = _first_in_cycle({r["id"]: r.get("supersedes") for r in s["policy_rules"]})
    for i, r in enumerate(s["policy_rules"]):
        if r["id"] in looped:
            err(f"policy_rules.{i}.supersedes", "Supersedes edges form a cycle.")

    unique("decisions", "id", lambda d: d["id"])
    decisions = {d["id"] for d in s["decisions"]}
    for i, d in enumerate(s["decisions"]):
        capability(f"decisions.{i}.capability", d["capability"])
        kinds = [scope_id.partition(":")[0] for scope_id in d["scope_ids"]]
        if len(set(kinds)) != len(kinds):
            err(f"decisions.{i}.scope_ids", "At most one scope id of each kind.")
        for j, scope_id in enumerate(d["scope_ids"]):
            problem = scope_id_error(scope_id, ref, allow_everywhere=False)
            if problem:
                err(f"decisions.{i}.scope_ids.{j}", problem)

    unique("media_jobs", "id", lambda j: j["id"])
    unique("media_jobs", "idempotency_key", lambda j: j["idempotency_key"])
    jobs = {j["id"] for j in s["media_jobs"]}
    for i, j in enumerate(s["media_jobs"]):
        capability(f"media_jobs.{i}.capability", j["capability"])
        character(f"media_jobs.{i}.character", j["character"])
        conversation(f"media_jobs.{i}.conversation", j.get("conversation"))
        found = conversations.get(str(j.get("conversation")))
        if (
            found is not None
            and j["character"] is not None
            and found["character"] != j["character"]
        ):
            err(f"media_jobs.{i}.character", "Not the character of the job's conversation.")

    unique("answers", "id", lambda a: a["id"])
    unique("answers", "decision", lambda a: a["decision"])
    for i, a in enumerate(s["answers"]):
        if a["decision"] not in decisions:
            err(f"answers.{i}.decision", "Not a decision of this snapshot.")
        if a.get("rule") is not None and a["rule"] not in rules:
            err(f"answers.{i}.rule", "Not a rule of this snapshot.")
        if a.get("media_job") is not None and a["media_job"] not in jobs:
            err(f"answers.{i}.media_job", "Not a media job of this snapshot.")
    return errors


def _check_withholding(s: dict, messages: dict, err) -> None:
    """F6 in an export file (§9): each tombstone's `withheld_messages` are messages of the
    file and its `withheld_replies` turns of it still waiting for their reply; a message's
    `withheld` says whether some tombstone lists it. A file of the previous format carries
    none of these."""
    turns = {str(t["id"]): t for t in s["turns"]}
    listed: set[str] = set()
    old = s["format"] not in MESSAGE_LINKS
    for i, t in enumerate(s["tombstones"]):
        if old and (t["withheld_messages"] or t["withheld_replies"]):
            err(f"tombstones.{i}.withheld_messages", f"Not part of the format {s['format']}.")
        for j, message in enumerate(t["withheld_messages"]):
            if str(message) not in messages:
                err(f"tombstones.{i}.withheld_messages.{j}", "Not a message of this snapshot.")
            listed.add(str(message))
        for j, turn in enumerate(t["withheld_replies"]):
            found = turns.get(str(turn))
            if found is None or found.get("reply_message") is not None:
                err(
                    f"tombstones.{i}.withheld_replies.{j}",
                    "Not a turn of this snapshot that waits for its reply.",
                )
    for i, m in enumerate(s["messages"]):
        if m["withheld"] != (str(m["id"]) in listed):
            err(
                f"messages.{i}.withheld",
                "Must say whether a tombstone of the snapshot withholds it.",
            )


def _check_memory_links(s: dict, err) -> None:
    """F7.2 in an export file (§9): each tombstone's `withheld_memories` are memories of the
    file that are not forgotten, each at most once. A file of an earlier format carries
    none."""
    memories = {str(m["id"]): m for m in s["memories"]}
    old = s["format"] not in MEMORY_LINKS
    for i, t in enumerate(s["tombstones"]):
        listed = [str(m) for m in t.get("withheld_memories", ())]
        if old and listed:
            err(f"tombstones.{i}.withheld_memories", f"Not part of the format {s['format']}.")
            continue
        if len(set(listed)) != len(listed):
            err(f"tombstones.{i}.withheld_memories", "Each memory at most once.")
        for j, memory in enumerate(listed):
            found = memories.get(memory)
            if found is None:
                err(f"tombstones.{i}.withheld_memories.{j}", "Not a memory of this snapshot.")
            elif found["status"] == "forgotten":
                err(
                    f"tombstones.{i}.withheld_memories.{j}",
                    "A forgotten memory holds no value: no forget withholds it.",
                )
