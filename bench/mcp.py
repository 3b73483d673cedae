"""`recall` through `/mcp` (SPEC §15 M2–M3) against `POST /api/v1/memory/resolve`, both through
the same gunicorn on loopback as the whole turn (`bench.turns.Server`), for one user with
1,000 memories and a connection made for them by `agents.services.connection_create`.

Each `/mcp` request is one stateless streamable-HTTP JSON-RPC `tools/call` (no `initialize`:
the server keeps no session), sent on `http.client` like every other request of the harness,
so a recall's time is one request's. Single client: recall and resolve calls alternate on one
connection (p50 of each, the ratio of the two). Then 8 client threads call recall for a
bounded time: calls/s and errors. A non-2xx answer, a JSON-RPC error, a tool result with
`isError` or an exception is an error."""

from __future__ import annotations

import json
import statistics
import time

from .endpoints import percentile
from .turns import THROTTLE_RUNTIME, Server, request

# The connection's own bucket (600/min by default) is sized for one assistant; raised so 8
# clients on one connection measure recall and not the limit (a 429 still counts as an error).
THROTTLE_CONNECTION = "1000000/min"
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


def recall_body(character: str, conversation: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "recall",
                "arguments": {"character": character, "conversation": conversation},
            },
        }
    ).encode()


def recall_outcome(status: int, data: bytes) -> tuple[int, str | None]:
    """(memories answered, None) for a good recall, else (0, why it is an error)."""
    if status != 200:
        return 0, f"mcp {status} {data[:120]!r}"
    try:
        answer = json.loads(data)
    except ValueError:
        return 0, f"mcp not JSON {data[:120]!r}"
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, dict):
        return 0, f"mcp JSON-RPC error {data[:120]!r}"
    if result.get("isError"):
        return 0, f"mcp tool error {data[:120]!r}"
    memories = (result.get("structuredContent") or {}).get("memories")
    if not isinstance(memories, list):
        return 0, f"mcp no memories {data[:120]!r}"
    return len(memories), None


def _call_mcp(conn, body: bytes, token: str) -> tuple[int, bytes]:
    conn.request("POST", "/mcp", body, {**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    response = conn.getresponse()
    data = response.read()
    if response.getheader("Connection", "").lower() == "close":
        conn.close()
    return response.status, data


def recall_work_factory(body: bytes, token: str):
    def work(index, conn, n):
        _, why = recall_outcome(*_call_mcp(conn, body, token))
        return (1, 0) if why is None else (0, why)

    return work


def _summary(latencies: list[float], errors: list[str]) -> dict:
    return {
        "calls": len(latencies),
        "p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p95_ms": percentile(latencies, 0.95) * 1000 if latencies else float("nan"),
        "errors": len(errors),
        "error_samples": errors[:5],
    }


def _alternate(server: Server, calls: dict, case: dict) -> dict[str, dict]:
    """Single client: each round one call of each (same connection object, same server),
    until `case['seconds']` or `max_calls`, at least `min_calls`; the warm-up is not kept."""
    conn = server.connection()
    times: dict[str, list[float]] = {name: [] for name in calls}
    errors: dict[str, list[str]] = {name: [] for name in calls}
    started = time.perf_counter()
    rounds = 0
    while rounds < case["warmup"] + case["max_calls"] and (
        rounds < case["warmup"] + case["min_calls"]
        or time.perf_counter() - started < case["seconds"]
    ):
        for name, call in calls.items():
            began = time.perf_counter()
            try:
                why = call(conn)
            except Exception as exc:  # noqa: BLE001 - an error is a result here
                why = f"{type(exc).__name__}: {exc}"[:200]
                conn.close()
                conn = server.connection()
            elapsed = time.perf_counter() - began
            if rounds >= case["warmup"]:
                times[name].append(elapsed)
                if why is not None:
                    errors[name].append(why[:200])
        rounds += 1
    conn.close()
    return {name: _summary(times[name], errors[name]) for name in calls}


def run(database_url: str, target: dict, runtime_token: str, *, config: dict, log) -> dict:
    """`target`: the user, character and conversation of the bench user, their memory count
    and their connection's token."""
    from .turns import _drive

    recall = recall_body(target["character"], target["conversation"])
    resolve = {
        "context": {
            "user": target["user"],
            "character": target["character"],
            "conversation": target["conversation"],
        }
    }
    answered: list[int] = []

    def recall_call(conn) -> str | None:
        count, why = recall_outcome(*_call_mcp(conn, recall, target["token"]))
        answered.append(count)
        return why

    def resolve_call(conn) -> str | None:
        status, data = request(conn, "POST", "/api/v1/memory/resolve", resolve, runtime_token)
        return None if status == 200 else f"resolve {status} {data[:120]!r}"

    server = Server(
        database_url,
        config["workers"],
        env={"THROTTLE_CONNECTION": THROTTLE_CONNECTION, "THROTTLE_RUNTIME": THROTTLE_RUNTIME},
        log_name="gunicorn-mcp.log",
    )
    server.start()
    work = recall_work_factory(recall, target["token"])
    try:
        _drive(server, config["clients"], min(2.0, config["seconds"] / 4), work)  # warm workers
        single = _alternate(
            server, {"recall": recall_call, "resolve": resolve_call}, config["case"]
        )
        eight = _drive(server, config["clients"], config["seconds"], work)
    finally:
        server.stop()
    r, s = single["recall"], single["resolve"]
    r["ratio"] = r["p50_ms"] / s["p50_ms"] if s["p50_ms"] else float("nan")
    r["memories"] = max(answered, default=0)
    log(
        f"  mcp recall {target['records']:,} memories: p50={r['p50_ms']:.1f}ms vs resolve "
        f"p50={s['p50_ms']:.1f}ms = {r['ratio']:.2f}x ({r['calls']} calls each, "
        f"{r['memories']} memories answered) errors={r['errors'] + s['errors']}"
    )
    log(
        f"  mcp recall {config['clients']} clients: {eight['per_second']:.1f} calls/s "
        f"p50={eight['p50_ms']:.0f}ms errors={eight['errors']}"
    )
    return {
        "server": f"gunicorn sync workers={config['workers']} on 127.0.0.1 (CONN_MAX_AGE=60)",
        "records": target["records"],
        "recall": r,
        "resolve": s,
        "eight_clients": eight,
    }
