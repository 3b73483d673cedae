"""The memory cache across processes (docs/DESIGN.md; SPEC §3, §7 I7): two processes, each with
its own cache, serve a random history of turns, plans, resolves and memory writes — facts,
corrections, confirmations, retractions, forgets — interleaved between them; every read is
answered twice, through the process's cache and around it, and the two answers are the same.

PostgreSQL only: the worker processes share the test database, which SQLite keeps in the test
process's memory. Bounded: a fixed seed and a fixed number of steps."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.helpers import ON_POSTGRES

pytestmark = [
    pytest.mark.skipif(
        not ON_POSTGRES,
        reason="needs PostgreSQL: the worker processes share "
        "the test database, which SQLite keeps in the "
        "test process's memory",
    ),
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
STEPS = 60
SEED = 20261201
TEXTS = [
    "My dog's name is Rex.",
    "Actually, my dog's name is Max.",
    "I like green tea.",
    "I like jazz.",
    "The basil plant is named Harbor.",
    "I renamed it. It is Marlowe now, not Harbor.",
    "I live in Lisbon.",
    "I moved to Porto.",
    "Priya works at Acme.",
    "How was your day?",
    "Call me Sam.",
    "I dislike being rushed.",
]
TIMES = [None, "2020-01-01T00:00:00Z", "2031-01-01T00:00:00Z"]


class Worker:
    def __init__(self, token: str, database: str):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DATABASE_URL": f"postgres://{database}"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.memory.cache_worker", token],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, method, path, body=None, compare=False) -> dict:
        self.proc.stdin.write(
            json.dumps({"method": method, "path": path, "body": body, "compare": compare}) + "\n"
        )
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the worker ended"
        return json.loads(line)

    def stop(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _database_url() -> str:
    s = connection.settings_dict
    return f"{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def comparable(answer: dict) -> dict:
    """An answer without what differs between any two calls: decision ids (each plan logs its
    own, D10) and the clock of a resolve's trace."""
    body = answer["body"]
    if isinstance(body, dict):
        body = json.loads(json.dumps(body))
        for decision in body.get("policy", []):
            decision.pop("decision_id", None)
        if isinstance(body.get("trace"), dict):
            body["trace"].pop("now", None)
    return {"status": answer["status"], "body": body}


def test_it_answers_as_uncached_answers_do_across_two_processes():
    from config.models import ApiToken
    from tests.factories import CharacterFactory, ConversationFactory, UserFactory

    user = UserFactory(username="twice")
    conversation = ConversationFactory(user=user, character=CharacterFactory(slug="rowan"))
    _, token = ApiToken.issue("cache-test")
    workers = [Worker(token, _database_url()), Worker(token, _database_url())]
    rng = random.Random(SEED)
    turns: list[str] = []
    compared = 0
    reused = [0, 0]
    context = {"user": user.username, "character": "rowan", "conversation": str(conversation.pk)}
    try:
        for step in range(STEPS):
            worker = rng.choice(workers)
            what = rng.choice(["turn", "turn", "plan", "resolve", "write"])
            now = rng.choice(TIMES)
            if what == "turn" or not turns:
                plan = {
                    "budget": rng.choice([60, 400, 2000]),
                    "memory_order": rng.choice(["certainty", "relevance"]),
                    "capabilities": ["tone.playful"],
                }
                created = worker.ask(
                    "POST",
                    f"/api/v1/conversations/{conversation.pk}/turns",
                    {"turn_key": f"k{step}", "content": rng.choice(TEXTS), "plan": plan},
                )
                assert created["status"] in (201, 422), created
                turns.append(
                    created["body"]["id"] if created["status"] == 201 else created["body"]["turn"]
                )
                continue
            if what == "plan":
                query = {
                    "budget": rng.choice([60, 400, 2000]),
                    "capabilities": "tone.playful",
                    "memory_order": rng.choice(["certainty", "relevance"]),
                    **({"now": now} if now else {}),
                }
                answer = worker.ask(
                    "GET", f"/api/v1/turns/{rng.choice(turns)}/prompt-plan", query, compare=True
                )
            elif what == "resolve":
                answer = worker.ask(
                    "POST",
                    "/api/v1/memory/resolve",
                    {"context": {**context, **({"now": now} if now else {})}},
                    compare=True,
                )
            else:
                listed = worker.ask("GET", "/api/v1/memories", {"user": user.username})
                records = [m for m in listed["body"]["results"] if m["status"] == "active"]
                if not records:
                    continue
                record = rng.choice(records)
                action = rng.choice(["confirm", "correct", "retract", "forget"])
                body = {"value": "Pepper"} if action == "correct" else {}
                worker.ask("POST", f"/api/v1/memories/{record['id']}/{action}", body)
                continue
            compared += 1
            reused[workers.index(worker)] = answer["from_cache"]
            assert comparable(answer) == comparable(answer["uncached"]), (step, what)
    finally:
        for worker in workers:
            worker.stop()
    assert compared >= STEPS // 4
    # Both processes answered from their caches (as kept, or caught up: a process keeps what
    # its own writes left at the version it read, so its next read catches up), not only
    # around them.
    assert min(reused) >= 3, reused
