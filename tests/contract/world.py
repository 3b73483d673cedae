"""A world where every reference an operation can take exists (SPEC §10 C1), and the mapping
that points a generated request's references at it. A request the schema allows may only be
refused for a reference to something absent; with every reference pointing into this world,
positive data must be accepted."""

from __future__ import annotations

import re

from tests.turns.api.snapshot_world import CHARACTERS, World

CAPABILITY = "tone.playful"


def build(api) -> World:
    """One user with conversations, turns (open and replied), memories, a rule, an ASK
    decision and media jobs."""
    w = World(api, "contract")
    w.turn(0, 0)
    w.turn(0, 3)
    w.turn(1, 1)
    w.reply(0)
    w.assert_(0, 0, "user")
    w.assert_(1, 0, "character")
    w.rule(0, "allow")
    w.rule(1, "deny", "character")
    w.decide(2, 1)
    w.job(0, "media.voice")
    # A cursor the feed handed out (V2): `after` is a reference, like an id.
    w.cursor = w.call("get", "/events", limit=1).json()["next"]
    return w


def _context(w: World, generated: dict) -> dict:
    """The generated context's shape (which ids it names) with the world's ids."""
    out = {"user": w.ref}
    if "character" in generated or "conversation" in generated:
        out["character"] = CHARACTERS[0]
    if "conversation" in generated or "scene" in generated:
        out["conversation"] = w.conversations[0]
        if "character" not in generated:
            out.pop("character")
    if "scene" in generated:
        out["scene"] = generated["scene"]
    if "now" in generated:
        out["now"] = generated["now"]
    return out


def _scope(w: World, generated: dict) -> dict:
    out = dict(generated)
    if "character" in out:
        out["character"] = CHARACTERS[0]
    if "conversation" in out:
        out["conversation"] = w.conversations[0]
    return out


EDGE_OF_TIME = re.compile(r"^(0001-01-01|9999-12-31)(T.*)[+-]\d\d:\d\d$")


def _instants(value):
    """A time on the first or last day of the calendar with an offset can fall outside years
    1–9999 in UTC, which the server refuses (SPEC §0, stated in each time's description but
    not expressible as a pattern): such a time is sent in UTC instead."""
    if isinstance(value, dict):
        return {k: _instants(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_instants(v) for v in value]
    if isinstance(value, str):
        return EDGE_OF_TIME.sub(r"\1\2Z", value)
    return value


def point_at(w: World, case) -> None:
    """Replace every reference of a generated case with one that exists in `w`; keep the
    rest (shapes, lengths, enums, ranges) exactly as generated."""
    from memory.models import MemoryRecord, Tombstone
    from policy.models import MediaJob

    params = case.path_parameters or {}
    if "user_ref" in params:
        params["user_ref"] = w.ref
    if "conversation_id" in params:
        params["conversation_id"] = w.conversations[0]
    if "turn_id" in params:
        params["turn_id"] = w.turns[-1]
    if "memory_id" in params:
        record = MemoryRecord.objects.filter(user__username=w.ref).order_by("-recorded_at").first()
        params["memory_id"] = str(record.pk) if record else params["memory_id"]
    if "tombstone_id" in params:
        tombstone = Tombstone.objects.filter(user__username=w.ref).first()
        params["tombstone_id"] = str(tombstone.pk) if tombstone else params["tombstone_id"]
    if "rule_id" in params:
        params["rule_id"] = w.rules[0]
    if "job_id" in params:
        job = MediaJob.objects.filter(user__username=w.ref).first()
        params["job_id"] = str(job.pk) if job else params["job_id"]
    query = case.query or {}
    if "user" in query:
        query["user"] = w.ref
    if "after" in query and case.path.endswith("/events"):
        query["after"] = w.cursor
    if "character" in query:
        query["character"] = CHARACTERS[0]
    if "capability" in query:
        query["capability"] = CAPABILITY
    if "capabilities" in query:
        query["capabilities"] = CAPABILITY
    for name, value in list(query.items()):
        query[name] = _instants(value)
    if isinstance(case.body, dict):
        case.body = _instants(case.body)
    body = case.body if isinstance(case.body, dict) else None
    if body is None:
        return
    if "user_import" in (case.operation.definition.raw.get("operationId") or ""):
        _snapshot(w, body)
        return
    if isinstance(body.get("user"), str):
        body["user"] = w.ref
    if case.path.endswith("/policy/rules"):
        # Cross-field rules the schema cannot state: a product default (no user) has the
        # product-default source and a global or character scope; a user's rule another source.
        if body.get("user"):
            if body.get("source") == "product-default":
                body["source"] = "explicit-user"
        else:
            body["source"] = "product-default"
            if body["scope"].get("kind") not in ("global", "character"):
                body["scope"] = {"kind": "global"}
    if "character" in body and isinstance(body["character"], str):
        body["character"] = CHARACTERS[0]
    if isinstance(body.get("context"), dict):
        body["context"] = _context(w, body["context"])
    if isinstance(body.get("scope"), dict):
        body["scope"] = _scope(w, body["scope"])
    if "capability" in body:
        media = case.path.endswith("/media-jobs")
        body["capability"] = "media.voice" if media else CAPABILITY
    if isinstance(body.get("plan"), dict) and body["plan"].get("capabilities"):
        body["plan"]["capabilities"] = [CAPABILITY]
    if "decision_id" in body:
        asks = [d for d in w.decisions if d["effect"] == "ask"]
        body["decision_id"] = asks[0]["decision_id"]
        body.pop("media_job", None)
    for name in ("sources", "supersedes", "explain", "media_job"):
        body.pop(name, None)
    if case.path.endswith("/remember"):
        body.pop("source", None)
    if body.get("valid_until"):
        # A cross-field rule the schema cannot state: a window ends after it starts (and
        # without `valid_from` it starts now).
        body.pop("valid_until")


def _snapshot(w: World, body: dict) -> None:
    """An import names its own user (the path's) and rows that reference each other; the
    generated rows keep the catalog-only lists and drop the ones that reference rows."""
    if isinstance(body.get("user"), dict):
        body["user"]["ref"] = w.ref
    for name in (
        "conversations",
        "messages",
        "turns",
        "memories",
        "tombstones",
        "retractions",
        "idempotency",
        "policy_rules",
        "decisions",
        "answers",
        "media_jobs",
        "keys",
        "characters",
        "reveals",
    ):
        if name in body:
            body[name] = []
