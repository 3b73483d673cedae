"""The relevance quality check (SPEC §7, I6): does a plan ordered by relevance fill a tight
memory section with memories about what the user is talking about?

A generated user has ``TOPICS × PER_TOPIC`` (30 × 10 = 300) memories. Each topic (a hobby, a
pet, a trip …) has its own vocabulary; each memory is about exactly one topic, but only some
name it in their key (``violin.teacher``) — others sit under a shared family
(``user.likes``, ``story.*``, ``plans.*``) and name the topic only in their value, and every
value mixes in words shared by all topics ("week", "friend", "morning" …). Memories have
random ages, confidences and scopes, so the I3 order (certainty, scope, newest) is
unrelated to topics. For a message about one topic (with two unrelated history messages
before it) and a budget whose memory share fits about ten items, the check counts how many
admitted memories are about that topic under ``relevance`` and under ``certainty``.

Pure (standard library, the pure core and the planner only): the suite runs it with no
database (`tests/turns/core/test_relevance_properties.py`), and `make bench` reports it.
Everything comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import math
import random
import statistics
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from conversations.scopes import Scope
from memory.domain import RESOLVER_VERSION, MemoryRecord, ProjectedMemory
from memory.projection import project
from turns.planner import PlanMessage, PlanParams, build_plan
from turns.tokens import estimate_memory

SEED = 20261115
PER_TOPIC = 10
ITEMS_THAT_FIT = 10
MEMORY_SHARE = 0.3
QUALITY_TARGET = 8  # of the ~10 admitted memories, at least this many about the topic
NOW = datetime(2026, 11, 15, 12, 0, tzinfo=UTC)
USER = "relevance-user"

# (topic word, its vocabulary, facets used as key ends)
TOPICS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "violin",
        ("bow", "strings", "concerto", "rosin", "recital", "tuning"),
        ("teacher", "piece", "practice", "maker", "case"),
    ),
    (
        "garden",
        ("tomatoes", "compost", "seedlings", "trellis", "mulch", "weeding"),
        ("bed", "harvest", "soil", "pest", "tool"),
    ),
    (
        "marathon",
        ("pace", "mileage", "sneakers", "finish", "splits", "taper"),
        ("race", "goal", "coach", "injury", "route"),
    ),
    (
        "pottery",
        ("clay", "kiln", "glaze", "wheel", "bisque", "vase"),
        ("studio", "piece", "teacher", "firing", "glaze_colour"),
    ),
    (
        "chess",
        ("opening", "endgame", "gambit", "rating", "bishop", "blitz"),
        ("club", "rating", "opening", "rival", "book"),
    ),
    (
        "sailing",
        ("dinghy", "jib", "regatta", "tack", "mooring", "keel"),
        ("boat", "harbour", "crew", "race", "course"),
    ),
    (
        "baking",
        ("sourdough", "starter", "croissants", "proofing", "oven", "crumb"),
        ("recipe", "bread", "starter_name", "oven", "cake"),
    ),
    (
        "astronomy",
        ("telescope", "nebula", "eclipse", "constellation", "jupiter", "eyepiece"),
        ("scope", "target", "site", "club", "comet"),
    ),
    (
        "photography",
        ("camera", "lens", "aperture", "darkroom", "portrait", "exposure"),
        ("camera", "lens", "subject", "album", "film"),
    ),
    (
        "knitting",
        ("yarn", "needles", "sweater", "cable", "purl", "wool"),
        ("project", "pattern", "yarn", "gift", "group"),
    ),
    (
        "climbing",
        ("boulder", "harness", "crag", "belay", "chalk", "overhang"),
        ("gym", "grade", "partner", "route", "shoes"),
    ),
    (
        "aquarium",
        ("tetras", "filter", "coral", "guppies", "substrate", "algae"),
        ("tank", "fish", "filter", "plant", "store"),
    ),
    (
        "beekeeping",
        ("hive", "honey", "queen", "swarm", "smoker", "frames"),
        ("hive", "harvest", "queen", "apiary", "mentor"),
    ),
    (
        "cycling",
        ("bike", "saddle", "gears", "peloton", "climb", "tyres"),
        ("bike", "route", "club", "ride", "repair"),
    ),
    (
        "poetry",
        ("sonnet", "stanza", "haiku", "verse", "rhyme", "anthology"),
        ("poem", "poet", "reading", "notebook", "contest"),
    ),
    (
        "woodworking",
        ("chisel", "dovetail", "lathe", "walnut", "plane", "sawdust"),
        ("project", "wood", "tool", "bench", "shop"),
    ),
    (
        "birdwatching",
        ("binoculars", "warbler", "heron", "migration", "plumage", "owl"),
        ("spot", "sighting", "guide", "list", "feeder"),
    ),
    (
        "surfing",
        ("waves", "surfboard", "swell", "wetsuit", "reef", "paddle"),
        ("board", "beach", "coach", "trip", "break"),
    ),
    (
        "calligraphy",
        ("ink", "nib", "brush", "lettering", "parchment", "strokes"),
        ("pen", "script", "class", "project", "paper"),
    ),
    (
        "camping",
        ("tent", "campfire", "sleeping_bag", "trail", "lantern", "stove"),
        ("site", "gear", "trip", "partner", "meal"),
    ),
    (
        "jazz",
        ("saxophone", "improvisation", "swing", "bebop", "quartet", "trumpet"),
        ("album", "club", "musician", "record", "gig"),
    ),
    (
        "dog",
        ("leash", "walkies", "fetch", "vet", "kibble", "puppy"),
        ("name", "breed", "vet", "toy", "walk"),
    ),
    (
        "wedding",
        ("bride", "venue", "vows", "bouquet", "reception", "toast"),
        ("date", "venue", "guest", "speech", "dress"),
    ),
    (
        "kyoto",
        ("temple", "shrine", "ryokan", "matcha", "bamboo", "geisha"),
        ("trip", "hotel", "temple", "flight", "souvenir"),
    ),
    (
        "thesis",
        ("chapter", "advisor", "citations", "draft", "defense", "dissertation"),
        ("topic", "advisor", "deadline", "chapter", "lab"),
    ),
    (
        "piano",
        ("keys", "sonata", "chords", "pedal", "scales", "nocturne"),
        ("teacher", "piece", "practice", "exam", "tuner"),
    ),
    (
        "fencing",
        ("epee", "foil", "lunge", "parry", "piste", "sabre"),
        ("club", "coach", "bout", "weapon", "tournament"),
    ),
    (
        "moving",
        ("boxes", "apartment", "landlord", "movers", "lease", "packing"),
        ("date", "city", "flat", "truck", "deposit"),
    ),
    (
        "volunteering",
        ("shelter", "charity", "soup", "donations", "shift", "food_bank"),
        ("place", "shift", "friend", "cause", "event"),
    ),
    (
        "grandmother",
        ("granny", "grandma", "recipes", "birthday", "nursing", "stories"),
        ("name", "town", "birthday", "recipe", "health"),
    ),
)
SHARED = (
    "week",
    "friend",
    "morning",
    "weekend",
    "favourite",
    "started",
    "plan",
    "evening",
    "city",
    "sister",
    "summer",
    "again",
    "really",
    "little",
    "every",
    "saturday",
)
FAMILIES = ("user.likes", "story", "plans")  # keys that do not name the topic
CHARACTER = "captain-rowan"
CONVERSATION = "0c6e7d2a-5b0e-4c38-9d51-1f2a3b4c5d6e"


@dataclass(frozen=True)
class Topic:
    name: str
    vocabulary: tuple[str, ...]
    facets: tuple[str, ...]


@dataclass
class RelevanceWorld:
    memories: list[ProjectedMemory]  # the projection's prompt, in the I3 order
    topic_of: dict[str, str]  # record id → topic name
    topics: list[Topic]
    budget: int
    memory_share: float


def _value(rng: random.Random, topic: Topic, named: bool) -> str:
    words = rng.sample(topic.vocabulary, 3) + rng.sample(SHARED, 1)
    if not named:
        words.insert(0, topic.name)
    rng.shuffle(words)
    return " ".join(w.replace("_", " ") for w in words)


def generate(
    seed: int = SEED,
    n_memories: int = PER_TOPIC * len(TOPICS),
    *,
    conversation: str = CONVERSATION,
    user: str = USER,
) -> RelevanceWorld:
    """`n_memories` memories spread evenly over the topics (the first topics get one more
    when it does not divide), every one visible in the context (user scope, the character
    `CHARACTER`, or `conversation`) and with a source."""
    rng = random.Random(seed)
    topics = [Topic(*t) for t in TOPICS]
    records: list[MemoryRecord] = []
    topic_of: dict[str, str] = {}
    for t_index, topic in enumerate(topics):
        per_topic = n_memories // len(topics) + (t_index < n_memories % len(topics))
        for i in range(per_topic):
            # Seven in ten name their topic in the key; the rest sit in a shared family.
            named = i % 10 < 7
            if named:
                key = f"{topic.name}.{topic.facets[i % len(topic.facets)]}" + (
                    f"_{i}" if i >= len(topic.facets) else ""
                )
            else:
                key = f"{FAMILIES[i % len(FAMILIES)]}.note_{t_index}_{i}"
            kind = rng.choice(("user", "user", "character", "conversation"))
            scope = {
                "user": Scope("user"),
                "character": Scope("character", character=CHARACTER),
                "conversation": Scope("conversation", conversation=conversation),
            }[kind]
            at = NOW - timedelta(minutes=rng.randrange(1, 60 * 24 * 365))
            record_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            records.append(
                MemoryRecord(
                    id=record_id,
                    user=user,
                    key=key,
                    value=_value(rng, topic, named),
                    scope=scope,
                    authority=rng.choice(("rule-extracted", "model-inferred", "user-confirmed")),
                    valid_from=at,
                    recorded_at=at,
                    evidence_time=at,
                    version=1,
                    confidence=rng.choice((1.0, 0.95, 0.9, 0.7, 0.6)),
                    sources=(f"msg-{record_id}",),
                )
            )
            topic_of[record_id] = topic.name
    rng.shuffle(records)
    projection = project(records, labels={}, many_keys=frozenset({"user.likes"}))
    memories = list(projection.prompt)
    mean_cost = statistics.fmean(estimate_memory(pm.label, pm.value) for pm in memories)
    cap = round(ITEMS_THAT_FIT * mean_cost)
    budget = math.ceil(cap / MEMORY_SHARE) + 1
    return RelevanceWorld(memories, topic_of, topics, budget, MEMORY_SHARE)


def message_about(topic: Topic, rng: random.Random) -> str:
    word = rng.choice(topic.vocabulary).replace("_", " ")
    shared = rng.choice(SHARED)
    return rng.choice(
        (
            f"I keep thinking about my {topic.name} this {shared}. What do you remember about the "
            f"{word}?",
            f"Can we talk about the {topic.name} again? The {word} has been on my mind since the "
            f"{shared}.",
            f"Remind me what I told you about {topic.name} and the {word}.",
        )
    )


SMALL_TALK = (
    "Good evening! It has been a long day.",
    "Evening. Come in, sit down, tell me everything.",
)


def plan_for(world: RelevanceWorld, topic: Topic, order: str, rng: random.Random):
    current = PlanMessage("current", 3, "user", message_about(topic, rng))
    history = [
        PlanMessage("h1", 1, "user", SMALL_TALK[0]),
        PlanMessage("h2", 2, "assistant", SMALL_TALK[1]),
    ]
    return build_plan(
        current=current,
        history=history,
        memories=world.memories,
        memory_excluded=[],
        params=PlanParams(budget=world.budget, memory_share=world.memory_share, memory_order=order),
        resolver_version=RESOLVER_VERSION,
    )


def quality(seed: int = SEED) -> dict:
    """For every topic: how many of the admitted memories are about it, under each order."""
    world = generate(seed)
    rows = []
    for topic in world.topics:
        row = {"topic": topic.name}
        for order in ("relevance", "certainty"):
            plan = plan_for(world, topic, order, random.Random(f"{seed}:{topic.name}"))
            row[order] = sum(world.topic_of[pm.record.id] == topic.name for pm in plan.memories)
            row[f"{order}_admitted"] = len(plan.memories)
        rows.append(row)
    relevance = [r["relevance"] for r in rows]
    certainty = [r["certainty"] for r in rows]
    admitted = [r["relevance_admitted"] for r in rows]
    return {
        "memories": len(world.memories),
        "topics": len(world.topics),
        "budget": world.budget,
        "memory_share": world.memory_share,
        "admitted_mean": statistics.fmean(admitted),
        "relevance_min": min(relevance),
        "relevance_mean": statistics.fmean(relevance),
        "certainty_min": min(certainty),
        "certainty_mean": statistics.fmean(certainty),
        "topics_meeting_target": sum(r >= QUALITY_TARGET for r in relevance),
        "target": QUALITY_TARGET,
        "rows": rows,
    }


def quality_over_seeds(seeds: int = 10, seed: int = SEED) -> dict:
    """`quality` for `seeds` generated users (the suite pins the first): how often the target
    holds across worlds, not just in one."""
    runs = [quality(seed + i) for i in range(seeds)]
    topics = sum(r["topics"] for r in runs)
    return {
        "seeds": seeds,
        "topics_meeting_target": sum(r["topics_meeting_target"] for r in runs),
        "topics": topics,
        "relevance_min": min(r["relevance_min"] for r in runs),
        "relevance_mean": statistics.fmean(r["relevance_mean"] for r in runs),
        "certainty_mean": statistics.fmean(r["certainty_mean"] for r in runs),
    }


# ---------------------------------------------------------------------------------------------
# The plan endpoint under each order, on a database (bench.worker)

ENDPOINT_MEMORIES = 1_000
ENDPOINT_MESSAGES = 100


def load_user(
    n_memories: int = ENDPOINT_MEMORIES, n_messages: int = ENDPOINT_MESSAGES, seed: int = SEED
) -> dict:
    """A user with `n_memories` memories that all pass P1–P4 (each from one of the
    conversation's messages), a conversation of `n_messages` messages and a turn asking
    about the first topic. Rows are bulk-inserted, as `bench.load` does."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from conversations.models import Conversation, Message, Turn
    from memory.models import MemoryProfile, MemoryRecord, MemorySource

    from .load import BATCH, ensure_characters, record_row

    rng = random.Random(seed + 1)
    ref = f"bench-relevance-{n_memories}"
    conversation_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    world = generate(seed, n_memories, conversation=conversation_id, user=ref)
    characters = ensure_characters()
    topic = world.topics[0]
    with transaction.atomic():
        user = get_user_model()(username=ref, date_joined=NOW - timedelta(days=500))
        user.set_unusable_password()
        user.save()
        MemoryProfile.objects.create(user=user)
        Conversation.objects.create(
            id=conversation_id,
            user=user,
            character_id=characters[CHARACTER],
            title="bench relevance",
            created_at=NOW - timedelta(days=400),
            last_seq=n_messages + 1,
        )
        start = NOW - timedelta(days=399)
        messages = [
            Message(
                id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                user=user,
                conversation_id=conversation_id,
                seq=seq,
                role="user" if seq % 2 else "assistant",
                content=SMALL_TALK[seq % 2] if seq > n_messages - 2 else f"Message {seq}.",
                created_at=start + timedelta(minutes=seq),
            )
            for seq in range(1, n_messages + 1)
        ]
        Message.objects.bulk_create(messages, batch_size=BATCH)
        current = Message.objects.create(
            user=user,
            conversation_id=conversation_id,
            seq=n_messages + 1,
            role="user",
            content=message_about(topic, random.Random(f"{seed}:{topic.name}")),
            created_at=start + timedelta(minutes=n_messages + 1),
        )
        turn = Turn.objects.create(
            user=user,
            conversation_id=conversation_id,
            turn_key="bench-relevance",
            user_message=current,
            created_at=current.created_at,
        )
        rows, links = [], []
        for n, pm in enumerate(world.memories):
            r = pm.record
            rows.append(record_row(r, user, characters))
            links.append(MemorySource(memory_id=r.id, message_id=messages[n % len(messages)].id))
        MemoryRecord.objects.bulk_create(rows, batch_size=BATCH)
        MemorySource.objects.bulk_create(links, batch_size=BATCH)
    return {
        "user": ref,
        "turn": str(turn.pk),
        "topic": topic.name,
        "memories": len(world.memories),
        "topic_of_key": {pm.key: world.topic_of[pm.record.id] for pm in world.memories},
        "budget": world.budget,
    }


def endpoint_cost(token: str, loaded: dict, cfg, log) -> dict:
    """`GET /turns/{id}/prompt-plan` with `memory_order=relevance` against the same request
    with `certainty`, calls alternating so machine noise hits both alike (ratio = relevance
    p50 / certainty p50), at a budget whose memory share holds every memory (every score is
    computed and every memory rendered) and at the quality check's tight budget."""
    from urllib.parse import urlencode

    from .endpoints import _client, _queries, measure_pair

    client = _client(token)
    out: dict = {"memories": loaded["memories"], "topic": loaded["topic"]}

    def url(order: str, budget: int) -> str:
        return f"/api/v1/turns/{loaded['turn']}/prompt-plan?" + urlencode(
            {"budget": budget, "memory_order": order, "now": "2026-11-15T12:00:00Z"}
        )

    def call(address: str):
        response = client.get(address)
        assert response.status_code == 200, response.content[:300]
        return response

    for label, budget in (("wide", 200_000), ("tight", loaded["budget"])):
        relevance_url, certainty_url = url("relevance", budget), url("certainty", budget)
        started = time.perf_counter()
        row = measure_pair(lambda u=relevance_url: call(u), lambda u=certainty_url: call(u), cfg)
        cpu = _cpu_p50(
            lambda u=relevance_url: call(u), lambda u=certainty_url: call(u), row["calls"]
        )
        answers = {order: call(url(order, budget)).json() for order in ("relevance", "certainty")}
        row = {
            "budget": budget,
            "calls": row["calls"],
            "relevance_p50_ms": row["p50_ms"],
            "relevance_p95_ms": row["p95_ms"],
            "certainty_p50_ms": row["floor_p50_ms"],
            "certainty_p95_ms": row["floor_p95_ms"],
            "ratio": row["ratio"],
            **cpu,
            "relevance_queries": _queries(lambda u=relevance_url: call(u)),
            "certainty_queries": _queries(lambda u=certainty_url: call(u)),
            "admitted": {o: len(a["memories"]) for o, a in answers.items()},
            # Plan memories carry no ids (P4); keys are unique per memory in this world.
            "about_topic": {
                o: sum(loaded["topic_of_key"][m["key"]] == loaded["topic"] for m in a["memories"])
                for o, a in answers.items()
            },
            "seconds": time.perf_counter() - started,
        }
        out[label] = row
        log(
            f"  plan relevance vs certainty ({label}, {loaded['memories']:,} memories): "
            f"p50 {row['relevance_p50_ms']:.1f} vs {row['certainty_p50_ms']:.1f} ms "
            f"(×{row['ratio']:.2f}; CPU ×{row['cpu_ratio']:.2f}), queries "
            f"{row['relevance_queries']} vs "
            f"{row['certainty_queries']}, "
            f"about the topic {row['about_topic']['relevance']}/{row['admitted']['relevance']} vs "
            f"{row['about_topic']['certainty']}/{row['admitted']['certainty']}"
        )
    return out


def _cpu_p50(relevance_call, certainty_call, calls: int) -> dict:
    """This process's CPU time per call (`time.process_time`), calls alternating: the
    request's own work, which other processes on a shared machine do not inflate the way
    they inflate wall time (the database server's share is not in it)."""
    samples: dict[str, list[float]] = {"relevance": [], "certainty": []}
    for _ in range(max(calls, 5)):
        for order, fn in (("relevance", relevance_call), ("certainty", certainty_call)):
            started = time.process_time()
            fn()
            samples[order].append(time.process_time() - started)
    relevance, certainty = (
        statistics.median(samples["relevance"]),
        statistics.median(samples["certainty"]),
    )
    return {
        "relevance_cpu_p50_ms": relevance * 1000,
        "certainty_cpu_p50_ms": certainty * 1000,
        "cpu_ratio": relevance / certainty if certainty else float("nan"),
    }
