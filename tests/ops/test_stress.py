"""Concurrency stress, on PostgreSQL: a few hundred mixed operations from client
threads over loopback against a live server — turns, replies (with retries), asserts,
corrections, forgets and rule changes for a handful of users — then the invariants: one
reply per turn, unique versions, no inverted windows, no forgotten value anywhere, policy
versions strictly increasing. Bounded in count and time; it stops by itself."""

import json
import random
import threading
import time
import urllib.error
import urllib.request

import pytest
from django.db.models import Count, F

from tests.helpers import postgres_only

pytestmark = [postgres_only, pytest.mark.django_db(transaction=True)]

USERS = ["ana", "ben", "cai", "dee"]
OPS_PER_THREAD = 40
THREADS = 5
DEADLINE_SECONDS = 120


class Client:
    def __init__(self, base, token):
        self.base, self.token = base, token

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raw, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        return status, (json.loads(raw) if raw else None)


def test_it_keeps_every_invariant_under_mixed_concurrent_load(live_server):
    from config.models import ApiToken
    from conversations.models import Message, Turn
    from memory.models import MemoryRecord, Tombstone
    from memory.selectors.records import tombstones_of
    from policy.models import UserPolicyVersion

    _, token = ApiToken.issue("stress")
    api = Client(live_server.url + "/api/v1", token)
    api.call("PUT", "/characters/rowan", {"name": "Rowan"})
    convs = {}
    for u in USERS:
        assert api.call("PUT", f"/users/{u}", {})[0] == 201
        convs[u] = api.call("POST", "/conversations", {"user": u, "character": "rowan"})[1]["id"]

    errors, rule_changes, seen_versions = [], {u: 0 for u in USERS}, {}
    lock = threading.Lock()
    started = time.monotonic()

    def worker(seed):
        try:
            work(seed)
        finally:
            from django.db import connection

            connection.close()

    def work(seed):
        rng = random.Random(seed)
        for i in range(OPS_PER_THREAD):
            if time.monotonic() - started > DEADLINE_SECONDS:
                return
            u = rng.choice(USERS)
            op = rng.choice(
                ["turn", "turn", "reply", "assert", "correct", "forget", "rule", "decide"]
            )
            try:
                if op == "turn":
                    key = f"k{rng.randrange(40)}"
                    s, body = api.call(
                        "POST",
                        f"/conversations/{convs[u]}/turns",
                        {"turn_key": key, "content": f"My dog's name is Rex{key}."},
                    )
                    ok = s in (200, 201, 409)
                    if s in (200, 201):
                        for _ in range(2):  # the runtime retries replies
                            rs, _ = api.call(
                                "POST",
                                f"/turns/{body['id']}/reply",
                                {"content": f"reply {seed}-{i}"},
                            )
                            ok = ok and rs in (200, 201)
                elif op == "reply":
                    turn = (
                        Turn.objects.filter(user__username=u)
                        .order_by("?")
                        .values_list("id", flat=True)
                        .first()
                    )
                    ok = True
                    if turn:
                        s, _ = api.call("POST", f"/turns/{turn}/reply", {"content": "late retry"})
                        ok = s in (200, 201)
                elif op == "assert":
                    s, _ = api.call(
                        "POST",
                        "/memories",
                        {
                            "user": u,
                            "key": rng.choice(["pet.name", "user.likes", "user.lives_in"]),
                            "value": rng.choice(["Rex", "Max", "jazz", "tea", "Boston"]),
                            "scope": {"kind": "user"},
                        },
                    )
                    ok = s in (200, 201)
                elif op == "correct":
                    s, res = api.call(
                        "POST", "/memory/resolve", {"context": {"user": u}, "keys": ["pet.name"]}
                    )
                    ok = s == 200
                    if ok and res["active"]:
                        s, _ = api.call(
                            "POST",
                            f"/memories/{res['active'][0]['id']}/correct",
                            {"value": rng.choice(["Ace", "Bolt"])},
                        )
                        ok = s in (
                            200,
                            201,
                            404,
                            409,
                        )  # it may have been corrected or forgotten meanwhile
                elif op == "forget":
                    s, res = api.call("POST", "/memory/resolve", {"context": {"user": u}})
                    ok = s == 200
                    if ok and res["active"]:
                        s, _ = api.call(
                            "POST",
                            f"/memories/{rng.choice(res['active'])['id']}/forget",
                            {"everywhere": rng.random() < 0.5},
                        )
                        ok = s in (200, 409)
                elif op == "rule":
                    s, rule = api.call(
                        "POST",
                        "/policy/rules",
                        {
                            "user": u,
                            "capability": "tone.playful",
                            "effect": rng.choice(["allow", "deny"]),
                            "source": "explicit-user",
                            "scope": {"kind": "global"},
                        },
                    )
                    ok = s == 201
                    if ok:
                        with lock:
                            rule_changes[u] += 1
                        if rng.random() < 0.5:
                            s, _ = api.call("POST", f"/policy/rules/{rule['id']}/revoke", {})
                            ok = s == 200
                            if ok:
                                with lock:
                                    rule_changes[u] += 1
                else:
                    s, d = api.call(
                        "POST",
                        "/policy/decide",
                        {
                            "context": {"user": u},
                            "capability": "tone.playful",
                            "requested_by": "assistant",
                        },
                    )
                    ok = s == 200
                    if ok:
                        with lock:
                            seen_versions.setdefault((seed, u), []).append(
                                d["policy_version"]["user"]
                            )
                if not ok:
                    with lock:
                        errors.append((op, s))
            except Exception as exc:  # noqa: BLE001 — every failure is reported below
                with lock:
                    errors.append((op, repr(exc)))

    threads = [
        threading.Thread(target=worker, args=(seed,), daemon=True) for seed in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_SECONDS + 30)
        assert not t.is_alive()

    assert errors == []
    # One reply per turn.
    replies = Message.objects.filter(role="assistant").count()
    assert replies == Turn.objects.filter(reply_message__isnull=False).count()
    assert (
        not Turn.objects.values("reply_message")
        .filter(reply_message__isnull=False)
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .exists()
    )
    # Unique versions, no inverted windows.
    dupes = (
        MemoryRecord.objects.values("user", "scope_id", "key", "version")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    assert not dupes.exists()
    assert not MemoryRecord.objects.filter(valid_until__lt=F("valid_from")).exists()
    # No forgotten value anywhere: every record a tombstone covers is an erased skeleton.
    from memory.domain import value_hash
    from memory.models import MemoryProfile

    for u in USERS:
        secret = MemoryProfile.objects.get(user__username=u).secret_bytes()
        stones = (
            tombstones_of(MemoryRecord.objects.filter(user__username=u).first().user)
            if Tombstone.objects.filter(user__username=u).exists()
            else []
        )
        for r in MemoryRecord.objects.filter(user__username=u):
            covered = any(
                t.blocks(
                    user=u,
                    key=r.key,
                    scope_id=r.scope_id,
                    evidence_time=r.evidence_time,
                    hashed_value=value_hash(secret, r.value),
                )
                for t in stones
            )
            if covered or r.status == "forgotten":
                assert r.value == "" and r.status == "forgotten", (u, r.key)
    # Policy versions strictly increasing: exactly one bump per change (so every change got
    # its own number), and a client never sees a version go backwards.
    assert sum(rule_changes.values()) > 0 and seen_versions
    for u in USERS:
        version = (
            UserPolicyVersion.objects.filter(user__username=u)
            .values_list("version", flat=True)
            .first()
            or 0
        )
        assert version == rule_changes[u]
    for (_, u), versions in seen_versions.items():
        assert versions == sorted(versions), (u, versions)
