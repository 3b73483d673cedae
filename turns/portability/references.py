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
    inside it (or, for characters and capabilities, to the catalog). Paths name the field;
    the sections are checked in the file's order, one checker each, and each row's fields in
    the row's order."""
    check = _References(s)
    for section in (
        check.catalog,
        check.conversations,
        check.messages,
        check.turns,
        check.memories,
        check.bookkeeping,
        check.policy_rules,
        check.decisions,
        check.media_jobs,
        check.answers,
    ):
        section()
    return check.errors


class _References:
    """One export file's references: what its rows may refer to (read once, the catalog's
    characters and capabilities included), and one checker per section of the file."""

    def __init__(self, s: dict):
        self.s, self.ref = s, s["user"]["ref"]
        self.errors: dict[str, list[str]] = {}
        # Inside the file.
        self.conversations_by_id = {str(c["id"]): c for c in s["conversations"]}
        self.messages_by_id = {str(m["id"]): m for m in s["messages"]}
        self.memories_by_id = {m["id"]: m for m in s["memories"]}
        self.rule_ids = {r["id"] for r in s["policy_rules"]}
        self.decision_ids = {d["id"] for d in s["decisions"]}
        self.job_ids = {j["id"] for j in s["media_jobs"]}
        # The catalog: characters (the file's, or stored) and capabilities (stored).
        self.slugs = _known_characters(s)
        self.capabilities = set(Capability.objects.values_list("name", flat=True))

    # -- what every section checks ------------------------------------------------------------

    def err(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def unique(self, section: str, field: str, key) -> None:
        """`key(row)` (None: the row has none) is unique among the section's rows."""
        seen: dict = {}
        for i, row in enumerate(self.s[section]):
            k = key(row)
            if k is None:
                continue
            if k in seen:
                self.err(f"{section}.{i}.{field}", f"Duplicate: {section}.{seen[k]} has the same.")
            else:
                seen[k] = i

    def character(self, path: str, slug) -> None:
        if slug is not None and slug not in self.slugs:
            self.err(path, "Unknown character: neither in the snapshot nor stored here.")

    def capability(self, path: str, name: str) -> None:
        if name not in self.capabilities:
            self.err(path, "Unknown capability.")

    def conversation(self, path: str, value) -> None:
        if value is not None and str(value) not in self.conversations_by_id:
            self.err(path, "Not a conversation of this snapshot.")

    def scope(self, path: str, scope: dict) -> None:
        """A scope object's references: its character and its conversation."""
        self.character(f"{path}.character", scope.get("character"))
        self.conversation(f"{path}.conversation", scope.get("conversation"))

    def in_file(self, path: str, value, rows, what: str) -> None:
        """An optional reference to a row of the file (`rows`: their ids)."""
        if value is not None and value not in rows:
            self.err(path, f"Not a {what} of this snapshot.")

    def acyclic(self, section: str) -> None:
        """The section's `supersedes` edges form no cycle."""
        looped = _first_in_cycle({r["id"]: r.get("supersedes") for r in self.s[section]})
        for i, r in enumerate(self.s[section]):
            if r["id"] in looped:
                self.err(f"{section}.{i}.supersedes", "Supersedes edges form a cycle.")

    def slot(self, memory: dict) -> tuple:
        return memory["key"], memory_scope_id(self.ref, memory["scope"])

    # -- the sections, in the file's order ----------------------------------------------------

    def catalog(self) -> None:
        self.unique("characters", "slug", lambda c: c["slug"])
        self.unique("keys", "key", lambda k: k["key"])

    def conversations(self) -> None:
        self.unique("conversations", "id", lambda c: c["id"])
        for i, c in enumerate(self.s["conversations"]):
            self.character(f"conversations.{i}.character", c["character"])

    def messages(self) -> None:
        self.unique("messages", "id", lambda m: m["id"])
        self.unique("messages", "seq", lambda m: (m["conversation"], m["seq"]))
        for i, m in enumerate(self.s["messages"]):
            self.conversation(f"messages.{i}.conversation", m["conversation"])

    def turns(self) -> None:
        self.unique("turns", "id", lambda t: t["id"])
        self.unique("turns", "turn_key", lambda t: (t["conversation"], t["turn_key"]))
        self.unique("turns", "user_message", lambda t: t["user_message"])
        self.unique("turns", "reply_message", lambda t: t.get("reply_message"))
        for i, t in enumerate(self.s["turns"]):
            self.conversation(f"turns.{i}.conversation", t["conversation"])
            self.turn_message(i, t, "user_message", "user")
            self.turn_message(i, t, "reply_message", "assistant")

    def turn_message(self, i: int, turn: dict, field: str, role: str) -> None:
        """A turn's message is a message of the file, in the turn's conversation, by `role`."""
        message = turn.get(field)
        if message is None:
            return
        found = self.messages_by_id.get(str(message))
        if found is None or found["conversation"] != turn["conversation"] or found["role"] != role:
            self.err(
                f"turns.{i}.{field}",
                f"Not a {role} message of this turn's conversation in the snapshot.",
            )

    def memories(self) -> None:
        self.unique("memories", "id", lambda m: m["id"])
        self.unique("memories", "version", lambda m: (*self.slot(m), m["version"]))
        for i, m in enumerate(self.s["memories"]):
            self.scope(f"memories.{i}.scope", m["scope"])
            self.sources(i, m["sources"])
            self.memory_supersedes(i, m)
        self.acyclic("memories")

    def sources(self, i: int, sources: list) -> None:
        if len(set(sources)) != len(sources):
            self.err(f"memories.{i}.sources", "Each message at most once.")
        for j, source in enumerate(sources):
            if str(source) not in self.messages_by_id:
                self.err(f"memories.{i}.sources.{j}", "Not a message of this snapshot.")

    def memory_supersedes(self, i: int, memory: dict) -> None:
        """A memory supersedes a memory of the file, of its own slot."""
        target = memory.get("supersedes")
        if target is None:
            return
        found = self.memories_by_id.get(target)
        if found is None:
            self.err(f"memories.{i}.supersedes", "Not a memory of this snapshot.")
        elif self.slot(found) != self.slot(memory):
            self.err(
                f"memories.{i}.supersedes",
                "A memory supersedes one of its own slot (same key and scope).",
            )

    def bookkeeping(self) -> None:
        """Tombstones (with the F6 and F7.2 links), retractions, idempotency records."""
        self.unique("tombstones", "id", lambda t: t["id"])
        for section in ("tombstones", "retractions"):
            everywhere = section == "tombstones"
            for i, row in enumerate(self.s[section]):
                problem = scope_id_error(row["scope"], self.ref, allow_everywhere=everywhere)
                if problem:
                    self.err(f"{section}.{i}.scope", problem)
        _check_withholding(self.s, self.messages_by_id, self.err)
        _check_memory_links(self.s, self.err)
        self.unique("idempotency", "key", lambda r: r["key"])
        for i, r in enumerate(self.s["idempotency"]):
            self.in_file(f"idempotency.{i}.record", r.get("record"), self.memories_by_id, "memory")

    def policy_rules(self) -> None:
        self.unique("policy_rules", "id", lambda r: r["id"])
        self.unique("policy_rules", "supersedes", lambda r: r.get("supersedes"))
        for i, r in enumerate(self.s["policy_rules"]):
            self.capability(f"policy_rules.{i}.capability", r["capability"])
            self.scope(f"policy_rules.{i}.scope", r["scope"])
            self.in_file(f"policy_rules.{i}.supersedes", r.get("supersedes"), self.rule_ids, "rule")
        self.acyclic("policy_rules")

    def decisions(self) -> None:
        self.unique("decisions", "id", lambda d: d["id"])
        for i, d in enumerate(self.s["decisions"]):
            self.capability(f"decisions.{i}.capability", d["capability"])
            kinds = [scope_id.partition(":")[0] for scope_id in d["scope_ids"]]
            if len(set(kinds)) != len(kinds):
                self.err(f"decisions.{i}.scope_ids", "At most one scope id of each kind.")
            for j, scope_id in enumerate(d["scope_ids"]):
                problem = scope_id_error(scope_id, self.ref, allow_everywhere=False)
                if problem:
                    self.err(f"decisions.{i}.scope_ids.{j}", problem)

    def media_jobs(self) -> None:
        self.unique("media_jobs", "id", lambda j: j["id"])
        self.unique("media_jobs", "idempotency_key", lambda j: j["idempotency_key"])
        for i, j in enumerate(self.s["media_jobs"]):
            self.capability(f"media_jobs.{i}.capability", j["capability"])
            self.character(f"media_jobs.{i}.character", j["character"])
            self.conversation(f"media_jobs.{i}.conversation", j.get("conversation"))
            found = self.conversations_by_id.get(str(j.get("conversation")))
            if (
                found is not None
                and j["character"] is not None
                and found["character"] != j["character"]
            ):
                self.err(
                    f"media_jobs.{i}.character", "Not the character of the job's conversation."
                )

    def answers(self) -> None:
        self.unique("answers", "id", lambda a: a["id"])
        self.unique("answers", "decision", lambda a: a["decision"])
        for i, a in enumerate(self.s["answers"]):
            if a["decision"] not in self.decision_ids:
                self.err(f"answers.{i}.decision", "Not a decision of this snapshot.")
            self.in_file(f"answers.{i}.rule", a.get("rule"), self.rule_ids, "rule")
            self.in_file(f"answers.{i}.media_job", a.get("media_job"), self.job_ids, "media job")


def _known_characters(s: dict) -> set:
    """The slugs the file's rows may name: the file's characters, and those stored here."""
    named = {c["character"] for c in s["conversations"]}
    named |= {m["scope"].get("character") for m in s["memories"]}
    named |= {r["scope"].get("character") for r in s["policy_rules"]}
    named |= {j["character"] for j in s["media_jobs"]}
    named.discard(None)
    slugs = {c["slug"] for c in s["characters"]}
    return slugs | set(
        Character.objects.filter(slug__in=named - slugs).values_list("slug", flat=True)
    )


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
