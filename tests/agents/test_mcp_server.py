"""`/mcp` end to end (SPEC §15 M2, M4): the SDK's own client against a running gunicorn (two
workers, stateless: any worker answers any request) and against `manage.py mcp` over stdio, on
a database of their own set up through the runtime's API. Every tool; each access level
refusing what it does not grant; one user's connection failing on the other's ids; revocation
and expiry on the next request; a forget through MCP withholding in the next plan; a save of a
forgotten value refused; every tool's arguments fuzzed with zero 500s and no traceback."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agents.tools import TOOLS
from tests.helpers import stop_process

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MESSAGE = "My dog's name is Rex. I work at Acme. My cat is called Miso."
CONNECTIONS = """
import json
from django.contrib.auth import get_user_model
from agents.services import connection_create
User = get_user_model()
made = {}
for name, user, access in (
    ("sam_forget", "sam", "forget"), ("sam_read", "sam", "read"), ("sam_write", "sam", "write"),
    ("alex", "alex", "forget"), ("revoked", "sam", "forget"), ("expired", "sam", "read"),
):
    made[name] = connection_create(
        user=User.objects.get(username=user), name=name, access=access
    ).token
print(json.dumps(made))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class World:
    url: str
    env: dict
    db: Path
    tokens: dict
    rest: httpx.Client
    sam_conversation: str
    alex_conversation: str

    def turn(self, conversation: str, key: str, content: str) -> dict:
        r = self.rest.post(
            f"/api/v1/conversations/{conversation}/turns",
            json={"turn_key": key, "content": content, "plan": {"budget": 2000}},
        )
        assert r.status_code == 201, r.text  # each turn is new (§10)
        return r.json()

    def sql(self, statement: str, *params) -> None:
        with sqlite3.connect(self.db, timeout=30) as db:
            db.execute(statement, params)


def _manage(env, *argv) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return (done.stdout.strip().splitlines() or [""])[-1]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp")
    db = tmp / "db.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "DJANGO_DEBUG": "false"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # gunicorn.conf.py makes the server its own
    _manage(env, "migrate", "--noinput", "--verbosity", "0")
    runtime = _manage(env, "create_api_token", "mcp-tests")
    port = _free_port()
    log = open(tmp / "gunicorn.log", "w")
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "config.wsgi",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    rest = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {runtime}"}, timeout=30)
    try:
        for _ in range(300):
            try:
                if rest.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail("gunicorn did not start")
        # A fresh database: each PUT creates (201, SPEC §10).
        for user in ("sam", "alex"):
            assert rest.put(f"/api/v1/users/{user}", json={}).status_code == 201
        assert rest.put("/api/v1/characters/rowan", json={"name": "Rowan"}).status_code == 201
        conversations = {
            user: rest.post(
                "/api/v1/conversations", json={"user": user, "character": "rowan"}
            ).json()["id"]
            for user in ("sam", "alex")
        }
        made = World(
            url=f"{base}/mcp",
            env=env,
            db=db,
            tokens=json.loads(_manage(env, "shell", "-c", CONNECTIONS)),
            rest=rest,
            sam_conversation=conversations["sam"],
            alex_conversation=conversations["alex"],
        )
        made.turn(made.sam_conversation, "t1", MESSAGE)
        made.turn(made.alex_conversation, "t1", "My dog's name is Bolt.")
        yield made
    finally:
        rest.close()
        stop_process(server)
        log.close()


class Seen:
    """Every HTTP answer the SDK's client got: no 500 may be among them."""

    def __init__(self):
        self.statuses: list[int] = []

    async def hook(self, response):
        self.statuses.append(response.status_code)


def _client(world: World, token: str, seen: Seen | None = None) -> Client:
    hooks = {"response": [seen.hook]} if seen else {}
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, event_hooks=hooks, timeout=60
    )
    return Client(streamable_http_client(world.url, http_client=http))


def _calls(world, token, calls, seen=None):
    async def run():
        async with _client(world, token, seen) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(run())


def _call(world, token, name, args):
    [result] = _calls(world, token, [(name, args)])
    return result


def _refused(result, code):
    assert result.is_error, result
    assert result.structured_content["code"] == code, result.structured_content
    return result.structured_content


def _sam_memory(world, key) -> dict:
    listed = _call(world, world.tokens["sam_read"], "list_memories", {"key": key})
    return next(m for m in listed.structured_content["memories"] if m["state"] == "active")


def test_it_lists_every_tool_with_its_schemas_and_words(world):
    """M3: every tool declares a strict input schema, an output schema and a description."""

    async def run():
        async with _client(world, world.tokens["sam_read"]) as client:
            return (await client.list_tools()).tools

    listed = {t.name: t for t in asyncio.run(run())}
    assert set(listed) == {t.name for t in TOOLS}
    for tool in listed.values():
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema["type"] == "object" and tool.description


def test_it_answers_every_read_tool(world):
    """M3 read: recall, list_memories, ask, decide."""
    token = world.tokens["sam_read"]
    recall, listed, asked, decided = _calls(
        world,
        token,
        [
            ("recall", {"query": "dog", "conversation": world.sam_conversation}),
            ("list_memories", {"state": "active"}),
            ("ask", {"question": "Where do I work?"}),
            ("decide", {"capability": "tone.playful", "character": "rowan"}),
        ],
    )
    assert recall.structured_content["memories"][0]["value"] == "Rex"
    assert {m["key"] for m in listed.structured_content["memories"]} >= {"dog.name", "cat.name"}
    assert asked.structured_content["answer"] == "Acme"
    assert decided.structured_content["effect"] == "ask"  # no rule: asked about (D2)


def test_it_answers_the_write_tools_as_model_inferred(world):
    """M3 write: remember, save, correct — `model-inferred` whatever the text says."""
    token = world.tokens["sam_write"]
    remembered, saved = _calls(
        world,
        token,
        [
            ("remember", {"text": "My favourite colour is green."}),
            ("save", {"key": "pet.name", "value": "Pixel"}),
        ],
    )
    assert not remembered.is_error and not saved.is_error
    assert saved.structured_content["memory"]["authority"] == "model-inferred"
    corrected = _call(
        world,
        token,
        "correct",
        {"memory": saved.structured_content["memory"]["id"], "value": "Pico"},
    )
    assert corrected.structured_content["outcome"] == "created"
    assert corrected.structured_content["memory"]["authority"] == "model-inferred"


def test_it_refuses_what_each_access_level_does_not_grant(world):
    """M1, M4: read refuses writes and forgets; read-and-write refuses forgets."""
    memory = _sam_memory(world, "cat.name")["id"]
    for token, names in (
        (world.tokens["sam_read"], ("remember", "save", "correct", "forget")),
        (world.tokens["sam_write"], ("forget",)),
    ):
        args = {
            "remember": {"text": "I work at Globex."},
            "save": {"key": "pet.kind", "value": "cat"},
            "correct": {"memory": memory, "value": "Pixel"},
            "forget": {"memory": memory},
        }
        for result in _calls(world, token, [(n, args[n]) for n in names]):
            _refused(result, "permission_denied")
    assert _sam_memory(world, "cat.name")["value"] == "Miso"


def test_it_fails_on_every_one_of_another_users_ids(world):
    """M1, M4: alex's connection reaches none of sam's memories or conversations."""
    memory = _sam_memory(world, "cat.name")["id"]
    results = _calls(
        world,
        world.tokens["alex"],
        [
            ("correct", {"memory": memory, "value": "Pixel"}),
            ("forget", {"memory": memory}),
            ("recall", {"conversation": world.sam_conversation}),
            (
                "decide",
                {
                    "capability": "tone.playful",
                    "character": "rowan",
                    "conversation": world.sam_conversation,
                },
            ),
        ],
    )
    for result in results:
        assert "sam" not in _refused(result, "not_found")["detail"]
    listed = _call(world, world.tokens["alex"], "list_memories", {})
    assert "Miso" not in json.dumps(listed.structured_content)
    assert _sam_memory(world, "cat.name")["value"] == "Miso"


def _raw_post(world, token):
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(
        world.url,
        headers=headers,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        timeout=30,
    )


def test_it_refuses_a_missing_a_runtime_and_a_wrong_token_with_401(world):
    """M2: 401 with `WWW-Authenticate`."""
    runtime = world.rest.headers["Authorization"].split()[1]
    for token in ("", runtime, world.tokens["sam_read"] + "x"):
        r = _raw_post(world, token)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")


def test_it_refuses_a_revoked_and_an_expired_connection_from_the_next_request(world):
    """M2, M4: revocation and expiry take effect on the next request."""
    for name, column, value in (
        ("revoked", "revoked_at", "2000-01-01 00:00:00"),
        ("expired", "expires_at", "2000-01-01 00:00:00"),
    ):
        token = world.tokens[name]
        assert not _call(world, token, "recall", {}).is_error
        world.sql(f"UPDATE agents_connection SET {column} = ? WHERE name = ?", value, name)
        r = _raw_post(world, token)
        assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
        with pytest.raises(Exception):  # noqa: B017 (the client's error for a 401)
            _call(world, token, "recall", {})


def test_it_withholds_in_the_next_plan_what_a_forget_through_mcp_forgot(world):
    """M4, F6–F7: a forget through MCP withholds in the next plan; recall and a save of the
    forgotten value never bring it back."""
    token = world.tokens["sam_forget"]
    dog = _sam_memory(world, "dog.name")
    forgotten = _call(world, token, "forget", {"memory": dog["id"]})
    assert forgotten.structured_content["withheld_messages"] == 1

    plan = world.turn(world.sam_conversation, "t2", "What should I feed my pet?")["plan"]

    assert "Rex" not in json.dumps(plan)
    # F6: the message that taught the value is withheld from the plan (reason `forgotten`).
    assert {"kind": "message", "reason": "forgotten"} in [
        {"kind": e["kind"], "reason": e["reason"]} for e in plan["excluded"]
    ], plan["excluded"]
    recalled, saved = _calls(
        world,
        token,
        [("recall", {"query": "dog"}), ("save", {"key": "dog.name", "value": "Rex"})],
    )
    assert "Rex" not in json.dumps(recalled.structured_content)
    assert (saved.structured_content["outcome"], saved.structured_content["reason"]) == (
        "blocked",
        "forgotten",
    )


def _fuzz_arguments(tool) -> list:
    """Wrong types, unknown fields, huge strings, NUL, for every argument of `tool`."""
    props = tool.input_schema["properties"]
    cases: list = [{"unknown": 1}, {name: None for name in props}, {"": ""}]
    for name in props:
        for bad in (1.5, True, [], {}, "x" * 100_000, "a\x00b", -1, "\u202e"):
            cases.append({name: bad})
    return cases


def test_it_answers_fuzzed_arguments_of_every_tool_without_a_500_or_a_traceback(world):
    """M4: every tool's arguments fuzzed — zero 500s, zero tracebacks in any answer."""
    seen = Seen()
    calls = [(tool.name, args) for tool in TOOLS for args in _fuzz_arguments(tool)]
    results = _calls(world, world.tokens["sam_forget"], calls, seen)

    # M3: a refused argument is a tool error inside a 200 answer, never an HTTP error.
    assert seen.statuses and set(seen.statuses) == {200}, set(seen.statuses)
    for (name, args), result in zip(calls, results, strict=True):
        answer = json.dumps(result.model_dump(mode="json"))
        assert "Traceback" not in answer and "server_error" not in answer, (name, args)
        if set(args) - set(next(t for t in TOOLS if t.name == name).input_schema["properties"]):
            _refused(result, "validation_error")


def test_it_serves_the_same_tools_over_stdio(world):
    """M2, M4: `manage.py mcp` serves the tools for the token in COMPANION_MEMORY_TOKEN, and
    checks it again on every call."""
    token = world.tokens["sam_write"]
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp"],
        cwd=str(ROOT),
        env={**world.env, "COMPANION_MEMORY_TOKEN": token},
    )

    async def run():
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            asked = await client.call_tool("ask", {"question": "Where do I work?"})
            unknown = await client.call_tool("ask", {"question": "x", "extra": True})
            world.sql(
                "UPDATE agents_connection SET revoked_at = ? WHERE name = ?",
                "2000-01-01 00:00:00",
                "sam_write",
            )
            after = await client.call_tool("ask", {"question": "Where do I work?"})
            return names, asked, unknown, after

    names, asked, unknown, after = asyncio.run(run())
    assert names == {t.name for t in TOOLS}
    assert asked.structured_content["answer"] == "Acme"
    _refused(unknown, "validation_error")
    _refused(after, "unauthenticated")


PARSE_ERROR, INVALID_PARAMS = -32700, -32602  # JSON-RPC 2.0's error codes


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall",'
            b'"arguments":{"query":"\\ud800"}}}',
            400,
            PARSE_ERROR,
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall",'
            b'"arguments":{"\\ud800\\u0000":1}}}',
            400,
            PARSE_ERROR,
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall",'
            b'"arguments":"query"}}',
            200,
            INVALID_PARAMS,
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no-such"}}',
            200,
            "not_found",  # a tool error (M3)
        ),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call"', 400, PARSE_ERROR),
        (b"\xff\xfe", 400, PARSE_ERROR),
        (b"[]", 400, INVALID_PARAMS),
    ],
)
def test_it_answers_malformed_requests_without_a_500_or_a_traceback(world, body, status, code):
    """M4: what the SDK's client cannot send (a lone surrogate, bodies that are not JSON-RPC)
    is refused too, never a 500."""
    r = httpx.post(
        world.url,
        content=body,
        headers={
            "Authorization": f"Bearer {world.tokens['sam_read']}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
        timeout=30,
    )
    answer = r.json()
    if "error" in answer:  # refused by the JSON-RPC layer
        got = answer["error"]["code"]
    else:  # refused by the tool
        got = answer["result"]["structuredContent"]["code"]
    assert (r.status_code, got) == (status, code), r.text
    assert "Traceback" not in r.text, r.text


def test_it_answers_a_forget_with_the_memories_it_withholds_as_its_schema_declares(world):
    """M3, F7.2: the forget tool declares the tombstone it answers — `withheld_memories` beside
    `withheld_messages` — and answers what `GET /tombstones/{id}` answers; the SDK's client
    checks the answer against that declared, closed schema."""
    made = {}
    for key, value in (("family.sister.name", "Priya"), ("people.priya.works_at", "Globex")):
        r = world.rest.post(
            "/api/v1/memories",
            json={"user": "alex", "key": key, "value": value, "authority": "user-confirmed"}
            | {"scope": {"kind": "user"}},
        )
        assert r.status_code == 201, r.text
        made[key] = r.json()["memory"]["id"]

    async def run():
        async with _client(world, world.tokens["alex"]) as client:
            declared = {t.name: t for t in (await client.list_tools()).tools}["forget"]
            answer = await client.call_tool("forget", {"memory": made["family.sister.name"]})
            return declared.output_schema, answer

    declared, forgotten = asyncio.run(run())
    assert declared["additionalProperties"] is False
    assert declared["properties"]["withheld_memories"]["type"] == "integer"
    assert {"withheld_messages", "withheld_memories"} <= set(declared["required"])
    assert not forgotten.is_error
    body = forgotten.structured_content
    assert (body["withheld_memories"], body["withheld_messages"]) == (1, 0)
    assert body == world.rest.get(f"/api/v1/tombstones/{body['id']}").json()
    assert "Priya" not in json.dumps(body) and "Globex" not in json.dumps(body)
