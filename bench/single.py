"""The single-client turn a user waits for — the one round trip (create with `plan`) + reply
from one client thread — on conversations no other phase touches: for each memory size a
fresh conversation of 100 messages (`turns.sizes[N].single_client`), and at the main size
also one of 5,000 messages (`turns.long_conversation.single_client`), built by bulk inserts
like every benchmark user (`bench.load`). Both at the main size run in alternating rounds on
the same server, so the machine's load hits both alike and their ratio is the figure (SPEC
I9: a conversation of 5,000 messages does not make the turn or its plan larger).

Each conversation gets a fixed number of turns, not a duration, so it grows by the same two
messages a turn whatever the speed: `messages_start` and `messages_end` say how many it held.
Before them, one turn from each of twice as many threads as workers warms every worker on that
conversation (its first turn there reads the history whole); those are not measured.
`plan_bytes`: the median JSON body size, in bytes, of the measured create-with-plan answers
(the turn and its plan, as the runtime receives them)."""

from __future__ import annotations

import statistics

from .turns import Server, _drive, summary, turn_one_work_factory


def message_count(conversation: str) -> int:
    from django.db import connection

    from conversations.models import Message

    try:
        return Message.objects.filter(conversation_id=conversation).count()
    finally:
        connection.close()


def run(
    server: Server,
    conversations: dict[str, str],
    token: str,
    *,
    turns: int,
    rounds: int,
    seconds: float,
    workers: int,
    tag: str,
) -> dict[str, dict]:
    """`conversations`: name → conversation id, each measured `turns` turns in `rounds`
    alternating rounds (each round's turns bounded by `seconds`); name → its drive summary
    with `plan_bytes`, `messages_start`, `messages_end`, `rounds`."""
    rounds = max(1, min(rounds, turns))
    for name, conversation in conversations.items():
        _drive(
            server,
            2 * workers,
            max(seconds, 10.0),
            turn_one_work_factory([conversation], token, f"{tag}-{name}-warm"),
            limit=1,
        )
    start = {name: message_count(c) for name, c in conversations.items()}
    drives: dict[str, list[dict]] = {name: [] for name in conversations}
    answers: dict[str, list[int]] = {name: [] for name in conversations}
    names = list(conversations)
    for r in range(rounds):
        limit = turns // rounds + (1 if r < turns % rounds else 0)
        for name in names if r % 2 == 0 else reversed(names):
            work = turn_one_work_factory(
                [conversations[name]], token, f"{tag}-{name}-{r}", answers[name]
            )
            drives[name].append(_drive(server, 1, seconds, work, limit=limit, keep=True))
    return {
        name: {
            **merged(drives[name]),
            "plan_bytes": statistics.median(answers[name]) if answers[name] else None,
            "messages_start": start[name],
            "messages_end": message_count(conversations[name]),
            "rounds": rounds,
        }
        for name in names
    }


def merged(drives: list[dict]) -> dict:
    """One summary of several drives (`_drive(..., keep=True)`) of the same clients."""
    latencies = [x for d in drives for x in d["latencies_s"]]
    return {
        **summary(
            drives[0]["clients"],
            sum(d["seconds"] for d in drives),
            latencies,
            sum(d["units"] for d in drives),
            sum(d["errors"] for d in drives),
        ),
        "error_samples": [x for d in drives for x in d["error_samples"]][:5],
    }


def rate_text(d: dict, unit: str) -> str:
    cpu = d.get("cpu_ms_per_request") or {}
    app, db = cpu.get("app"), cpu.get("db")
    return (
        f"{d['per_second']:.1f} {unit} p50={d['p50_ms']:.0f}ms errors={d['errors']}"
        + (f" CPU/request app {app:.2f} ms" if app is not None else "")
        + (f" db {db:.2f} ms" if db is not None else "")
    )


def single_text(d: dict) -> str:
    return (
        f"p50={d['p50_ms']:.1f}ms p99={d['p99_ms']:.1f}ms ({d['units']} turns, "
        f"{d['messages_start']:,}→{d['messages_end']:,} messages) errors={d['errors']}"
    )
