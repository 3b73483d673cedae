"""Users with every kind of row a snapshot holds (SPEC §9), built through the API, and the
reads that must answer the same before an export and after the import.

`World` wraps one user and exposes each write of the API as a small operation; the
round-trip property draws sequences of them, `build_every_kind` plays one fixed sequence that
leaves at least one row of every kind (media jobs in every status included)."""

from __future__ import annotations

import itertools

NOW = "2030-01-01T00:00:00Z"
CHARACTERS = ("rowan", "lark")
SENTENCES = (
    "My dog's name is Rex.",
    "I like jazz.",
    "I like rock.",
    "Priya works at Acme.",
    "I live in Boston.",
    "Actually, I live in Paris.",
    "Call me Wren.",
    "Hello there.",
    "I renamed my dog. He is Max now.",
    "Priya lives in Lisbon.",
)
KEYS = (
    ("pet.name", ("Rex", "Max")),
    ("story.lantern.status", ("lit", "unlit")),
    ("user.likes", ("jazz", "rock", "tea")),
    ("family.sister.name", ("Priya", "Zoë")),
)
CAPABILITIES = ("tone.playful", "topic.work", "media.voice", "media.image")
_counter = itertools.count()


def ensure_characters(api) -> None:
    for slug in CHARACTERS:
        api.put(f"/api/v1/characters/{slug}", {"name": slug.title()}, format="json")


class World:
    """One user's data, grown through the API. Every answer must be below 500."""

    def __init__(self, api, ref: str | None = None):
        self.api = api
        self.ref = ref or f"world{next(_counter)}"
        self.conversations: list[str] = []
        self.turns: list[str] = []
        self.memories: list[str] = []
        self.rules: list[str] = []
        self.decisions: list[dict] = []
        self.jobs: list[dict] = []
        ensure_characters(api)
        assert self.call("put", f"/users/{self.ref}", {}).status_code == 201  # a new user
        for slug in CHARACTERS:
            self.conversation(slug)

    def call(self, method: str, path: str, body=None, **params):
        if method == "get":
            response = self.api.get("/api/v1" + path, params)
        else:
            response = getattr(self.api, method)("/api/v1" + path, body, format="json")
        assert response.status_code < 500, (method, path, body, response.content[:500])
        return response

    def ctx(self, i: int = 0, scene: str | None = None) -> dict:
        conv = self.conversations[i % len(self.conversations)]
        out = {"user": self.ref, "character": CHARACTERS[i % len(CHARACTERS)], "conversation": conv}
        if scene:
            out["scene"] = scene
        return out

    def scope(self, kind: str, i: int = 0) -> dict:
        if kind == "character":
            return {"kind": "character", "character": CHARACTERS[i % len(CHARACTERS)]}
        if kind == "conversation":
            return {
                "kind": "conversation",
                "conversation": self.conversations[i % len(self.conversations)],
            }
        if kind == "scene":
            return {
                "kind": "scene",
                "conversation": self.conversations[i % len(self.conversations)],
                "scene": "greenhouse",
            }
        return {"kind": "user"}

    def pick(self, items: list, i: int):
        return items[i % len(items)] if items else None

    # -- operations -----------------------------------------------------------------------------

    def conversation(self, slug: str) -> None:
        r = self.call(
            "post", "/conversations", {"user": self.ref, "character": slug, "title": f"with {slug}"}
        )
        self.conversations.append(r.json()["id"])

    def turn(self, i: int, sentence: int, scene: str | None = None) -> None:
        conv = self.conversations[i % len(self.conversations)]
        body = {"turn_key": f"t{len(self.turns)}", "content": SENTENCES[sentence % len(SENTENCES)]}
        if scene:
            body["scene"] = scene
        r = self.call("post", f"/conversations/{conv}/turns", body)
        if r.status_code in (200, 201):
            self.turns.append(r.json()["id"])
            self.memories += [e["memory"]["id"] for e in r.json()["extracted"] if e.get("memory")]

    def reply(self, i: int) -> None:
        turn = self.pick(self.turns, i)
        if turn:
            self.call("post", f"/turns/{turn}/reply", {"content": "Noted."})

    def assert_(
        self,
        key: int,
        value: int,
        kind: str,
        authority: str = "model-inferred",
        closed: bool = False,
        idempotent: bool = False,
    ) -> None:
        name, values = KEYS[key % len(KEYS)]
        body = {
            "user": self.ref,
            "key": name,
            "value": values[value % len(values)],
            "scope": self.scope(kind, key),
            "authority": authority,
        }
        if closed:
            body.update(valid_from="2026-01-01T00:00:00Z", valid_until="2026-06-01T00:00:00Z")
        if idempotent:
            body["idempotency_key"] = f"idem-{key}-{value}-{kind}"
        r = self.call("post", "/memories", body)
        if r.status_code in (200, 201) and r.json().get("memory"):
            self.memories.append(r.json()["memory"]["id"])

    def correct(self, i: int, value: str = "Marlowe") -> None:
        memory = self.pick(self.memories, i)
        if memory:
            r = self.call("post", f"/memories/{memory}/correct", {"value": value})
            if r.status_code in (200, 201) and r.json().get("memory"):
                self.memories.append(r.json()["memory"]["id"])

    def confirm(self, i: int) -> None:
        memory = self.pick(self.memories, i)
        if memory:
            self.call("post", f"/memories/{memory}/confirm", {})

    def retract(self, i: int) -> None:
        memory = self.pick(self.memories, i)
        if memory:
            self.call("post", f"/memories/{memory}/retract", {})

    def forget(self, i: int, everywhere: bool = False, whole_key: bool = False) -> None:
        memory = self.pick(self.memories, i)
        if memory:
            self.call(
                "post",
                f"/memories/{memory}/forget",
                {"everywhere": everywhere, "whole_key": whole_key},
            )

    def switch(self, learn: bool, use: bool) -> None:
        """I8: the memory switches, through the API (so `changed_by` is `api`)."""
        self.call("put", f"/users/{self.ref}/memory-settings", {"learn": learn, "use": use})

    def support_forget(self, i: int) -> None:
        """A forget made by support on the user's behalf (the tombstone says so)."""
        from django.contrib.auth import get_user_model

        from memory.forgetting import memory_forget

        memory = self.pick(self.memories, i)
        if memory:
            try:
                memory_forget(
                    record_id=memory,
                    user=get_user_model().objects.get(username=self.ref),
                    by="support",
                )
            except Exception as exc:  # noqa: BLE001 - a refusal (already forgotten) is a normal outcome
                from config.errors import DomainError

                assert isinstance(exc, DomainError), exc

    def time_zone(self, i: int) -> None:
        from django.contrib.auth import get_user_model

        from memory.services import profile_set_time_zone

        zones = ("Europe/Berlin", "America/New_York", "Asia/Tokyo", "")
        profile_set_time_zone(
            user=get_user_model().objects.get(username=self.ref), time_zone=zones[i % len(zones)]
        )

    def rule(self, capability: int, effect: str, kind: str = "global") -> None:
        scope = {"kind": kind} if kind == "global" else self.scope(kind, capability)
        r = self.call(
            "post",
            "/policy/rules",
            {
                "user": self.ref,
                "capability": CAPABILITIES[capability % len(CAPABILITIES)],
                "effect": effect,
                "source": "explicit-user",
                "scope": scope,
            },
        )
        if r.status_code == 201:
            self.rules.append(r.json()["id"])

    def revoke(self, i: int) -> None:
        rule = self.pick(self.rules, i)
        if rule:
            self.call("post", f"/policy/rules/{rule}/revoke", {})

    def decide(self, capability: int, i: int = 0, scene: str | None = None) -> None:
        r = self.call(
            "post",
            "/policy/decide",
            {
                "context": self.ctx(i, scene),
                "capability": CAPABILITIES[capability % len(CAPABILITIES)],
                "requested_by": "user",
            },
        )
        if r.status_code == 200:
            self.decisions.append(r.json())

    def answer(self, i: int, answer: str = "allow", remember: str = "once") -> None:
        asks = [d for d in self.decisions if d["effect"] == "ask"]
        decision = self.pick(asks, i)
        if decision:
            self.call(
                "post",
                "/policy/answers",
                {"decision_id": decision["decision_id"], "answer": answer, "remember": remember},
            )

    def job(self, i: int, capability: str = "media.image") -> dict | None:
        r = self.call(
            "post",
            "/media-jobs",
            {
                "context": self.ctx(i),
                "capability": capability,
                "requested_by": "user",
                "idempotency_key": f"job-{len(self.jobs)}",
            },
        )
        if r.status_code in (200, 201):
            self.jobs.append(r.json())
            return r.json()
        return None

    def answer_job(self, i: int, answer: str = "allow", remember: str = "once") -> None:
        job = self.pick(self.jobs, i)
        if job and job["decision"]["effect"] == "ask":
            self.call(
                "post",
                "/policy/answers",
                {
                    "decision_id": job["decision"]["decision_id"],
                    "answer": answer,
                    "remember": remember,
                    "media_job": job["id"],
                },
            )

    def start(self, i: int) -> None:
        job = self.pick(self.jobs, i)
        if job:
            self.call("post", f"/media-jobs/{job['id']}/start", {})

    def complete(self, i: int) -> None:
        job = self.pick(self.jobs, i)
        if job:
            self.call("post", f"/media-jobs/{job['id']}/complete", {})


OPERATIONS = (
    "turn",
    "reply",
    "assert_",
    "correct",
    "confirm",
    "retract",
    "forget",
    "rule",
    "revoke",
    "decide",
    "answer",
    "job",
    "answer_job",
    "start",
    "complete",
    "switch",
    "support_forget",
    "time_zone",
)


def build_every_kind(api, ref: str | None = None) -> World:
    """One fixed sequence leaving at least one row of every kind, media jobs in every status."""
    w = World(api, ref)
    w.turn(0, 0, scene="greenhouse")
    for sentence in (1, 2, 3, 4, 8):
        w.turn(0, sentence)
    w.turn(1, 6)
    for i in range(3):
        w.reply(i)
    w.reply(0)  # replayed
    w.assert_(0, 0, "user", idempotent=True)
    w.assert_(0, 0, "user", idempotent=True)  # replayed
    pet = len(w.memories) - 1
    w.assert_(1, 0, "character")
    story = len(w.memories) - 1
    w.assert_(1, 1, "conversation", authority="user-confirmed")
    lantern = len(w.memories) - 1
    w.assert_(0, 1, "scene", closed=True)
    scene_pet = len(w.memories) - 1
    likes = []
    for value in range(3):
        w.assert_(2, value, "user")
        likes.append(len(w.memories) - 1)
    w.correct(pet)
    w.confirm(story)
    w.retract(likes[1])  # a many key: the value slot's hash is kept
    w.retract(lantern)
    w.forget(likes[0])  # value-level (many key)
    w.forget(scene_pet, everywhere=True)
    w.forget(story)  # its scope only
    w.support_forget(likes[2])  # by support, on the user's behalf
    w.assert_(3, 0, "user")
    w.forget(len(w.memories) - 1)  # "Priya": withholds where Priya works (F7.2)
    w.time_zone(0)
    w.switch(learn=False, use=True)
    w.turn(0, 5)  # a turn made while learning was off
    w.switch(learn=True, use=False)
    w.rule(0, "allow")
    w.rule(1, "deny", "character")
    w.rule(0, "deny", "conversation")
    w.revoke(2)
    w.decide(2, 0, scene="greenhouse")
    w.answer(0, "allow", "scene")
    w.decide(2, 1)
    # Media jobs: needs-confirmation, queued (answered once), running, done, rejected, cancelled.
    for _ in range(6):
        w.job(0)
    w.answer_job(1)  # queued, allowed once
    w.answer_job(2)
    w.start(2)  # running
    w.answer_job(3)
    w.start(3)
    w.complete(3)  # done
    w.answer_job(4, "deny")  # rejected
    w.answer_job(5)
    w.rule(3, "deny")  # media.image denied from now on
    w.start(5)  # cancelled
    return w


def fingerprint(api, ref: str, capabilities=CAPABILITIES) -> dict:
    """What a user's data answers: resolve for every context (with and without each scene),
    every turn's prompt plan, and the user's lists."""
    from conversations.models import Conversation, Turn

    out = {}
    for conv in (
        Conversation.objects.filter(user__username=ref).select_related("character").order_by("id")
    ):
        scenes = set(Turn.objects.filter(conversation=conv).values_list("scene", flat=True)) | {
            None,
            "greenhouse",
        }
        for scene in sorted(scenes, key=str):
            ctx = {
                "user": ref,
                "character": conv.character.slug,
                "conversation": str(conv.pk),
                "now": NOW,
            }
            if scene:
                ctx["scene"] = scene
            r = api.post("/api/v1/memory/resolve", {"context": ctx}, format="json")
            assert r.status_code == 200, r.content[:300]
            body = r.json()
            body.pop("trace", None)
            out[("resolve", str(conv.pk), scene)] = body
            for capability in capabilities:
                r = api.post(
                    "/api/v1/policy/decide",
                    {"context": ctx, "capability": capability, "requested_by": "user"},
                    format="json",
                )
                assert r.status_code == 200, r.content[:300]
                body = r.json()
                out[("decide", str(conv.pk), scene, capability)] = (
                    body["effect"],
                    body["reason"],
                    body["rule_ids"],
                    body["policy_version"],
                )
    for turn_id in (
        Turn.objects.filter(user__username=ref)
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    ):
        r = api.get(
            f"/api/v1/turns/{turn_id}/prompt-plan",
            {"budget": 1200, "now": NOW, "capabilities": ",".join(CAPABILITIES)},
        )
        if r.status_code == 409:  # F7.1: a turn whose own message a forget withholds
            assert r.json()["code"] == "message_withheld", r.content[:300]
            out[("plan", str(turn_id))] = "message_withheld"
            continue
        assert r.status_code == 200, r.content[:300]
        plan = r.json()
        out[("plan", str(turn_id))] = (
            plan["plan_hash"],
            [(d["effect"], d["reason"]) for d in plan["policy"]],
        )
    for path in ("/memories", "/tombstones", "/policy/rules"):
        r = api.get("/api/v1" + path, {"user": ref, "limit": 500})
        assert r.status_code == 200, (path, r.content[:300])
        out[("list", path)] = r.json()["results"]
    return out


def reads_answer(api, ref: str) -> None:
    """Every read of a user answers (after any accepted import): export, lists, history of
    every key, resolve and plan."""
    from memory.models import MemoryRecord

    assert api.get(f"/api/v1/users/{ref}/export").status_code == 200
    fingerprint(api, ref, capabilities=CAPABILITIES[-1:])
    for key, scope in (
        MemoryRecord.objects.filter(user__username=ref).values_list("key", "scope_id").distinct()
    ):
        r = api.get("/api/v1/memory/history", {"user": ref, "key": key, "scope": scope})
        assert r.status_code == 200, r.content[:300]
    for memory in (
        MemoryRecord.objects.filter(user__username=ref)
        .order_by("id")
        .values_list("id", flat=True)[:5]
    ):
        assert api.get(f"/api/v1/memories/{memory}").status_code == 200
    r = api.get("/api/v1/memory/ask", {"user": ref, "q": "Where does Priya work?"})
    assert r.status_code == 200, r.content[:300]


def without_exported_at(snapshot: dict) -> dict:
    return {k: v for k, v in snapshot.items() if k != "exported_at"}
