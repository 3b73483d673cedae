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
database (`tests/conversations/test_relevance.py`), and `make bench` reports it. Everything
comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from conversations.planner import PlanMessage, PlanParams, build_plan
from conversations.tokens import estimate_memory
from memory.domain import RESOLVER_VERSION, MemoryRecord, ProjectedMemory, Scope
from memory.projection import project

SEED = 20261115
PER_TOPIC = 10
ITEMS_THAT_FIT = 10
MEMORY_SHARE = 0.3
QUALITY_TARGET = 8  # of the ~10 admitted memories, at least this many about the topic
NOW = datetime(2026, 11, 15, 12, 0, tzinfo=UTC)
USER = "relevance-user"

# (topic word, its vocabulary, facets used as key ends)
TOPICS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("violin", ("bow", "strings", "concerto", "rosin", "recital", "tuning"), ("teacher", "piece", "practice", "maker", "case")),
    ("garden", ("tomatoes", "compost", "seedlings", "trellis", "mulch", "weeding"), ("bed", "harvest", "soil", "pest", "tool")),
    ("marathon", ("pace", "mileage", "sneakers", "finish", "splits", "taper"), ("race", "goal", "coach", "injury", "route")),
    ("pottery", ("clay", "kiln", "glaze", "wheel", "bisque", "vase"), ("studio", "piece", "teacher", "firing", "glaze_colour")),
    ("chess", ("opening", "endgame", "gambit", "rating", "bishop", "blitz"), ("club", "rating", "opening", "rival", "book")),
    ("sailing", ("dinghy", "jib", "regatta", "tack", "mooring", "keel"), ("boat", "harbour", "crew", "race", "course")),
    ("baking", ("sourdough", "starter", "croissants", "proofing", "oven", "crumb"), ("recipe", "bread", "starter_name", "oven", "cake")),
    ("astronomy", ("telescope", "nebula", "eclipse", "constellation", "jupiter", "eyepiece"), ("scope", "target", "site", "club", "comet")),
    ("photography", ("camera", "lens", "aperture", "darkroom", "portrait", "exposure"), ("camera", "lens", "subject", "album", "film")),
    ("knitting", ("yarn", "needles", "sweater", "cable", "purl", "wool"), ("project", "pattern", "yarn", "gift", "group")),
    ("climbing", ("boulder", "harness", "crag", "belay", "chalk", "overhang"), ("gym", "grade", "partner", "route", "shoes")),
    ("aquarium", ("tetras", "filter", "coral", "guppies", "substrate", "algae"), ("tank", "fish", "filter", "plant", "store")),
    ("beekeeping", ("hive", "honey", "queen", "swarm", "smoker", "frames"), ("hive", "harvest", "queen", "apiary", "mentor")),
    ("cycling", ("bike", "saddle", "gears", "peloton", "climb", "tyres"), ("bike", "route", "club", "ride", "repair")),
    ("poetry", ("sonnet", "stanza", "haiku", "verse", "rhyme", "anthology"), ("poem", "poet", "reading", "notebook", "contest")),
    ("woodworking", ("chisel", "dovetail", "lathe", "walnut", "plane", "sawdust"), ("project", "wood", "tool", "bench", "shop")),
    ("birdwatching", ("binoculars", "warbler", "heron", "migration", "plumage", "owl"), ("spot", "sighting", "guide", "list", "feeder")),
    ("surfing", ("waves", "surfboard", "swell", "wetsuit", "reef", "paddle"), ("board", "beach", "coach", "trip", "break")),
    ("calligraphy", ("ink", "nib", "brush", "lettering", "parchment", "strokes"), ("pen", "script", "class", "project", "paper")),
    ("camping", ("tent", "campfire", "sleeping_bag", "trail", "lantern", "stove"), ("site", "gear", "trip", "partner", "meal")),
    ("jazz", ("saxophone", "improvisation", "swing", "bebop", "quartet", "trumpet"), ("album", "club", "musician", "record", "gig")),
    ("dog", ("leash", "walkies", "fetch", "vet", "kibble", "puppy"), ("name", "breed", "vet", "toy", "walk")),
    ("wedding", ("bride", "venue", "vows", "bouquet", "reception", "toast"), ("date", "venue", "guest", "speech", "dress")),
    ("kyoto", ("temple", "shrine", "ryokan", "matcha", "bamboo", "geisha"), ("trip", "hotel", "temple", "flight", "souvenir")),
    ("thesis", ("chapter", "advisor", "citations", "draft", "defense", "dissertation"), ("topic", "advisor", "deadline", "chapter", "lab")),
    ("piano", ("keys", "sonata", "chords", "pedal", "scales", "nocturne"), ("teacher", "piece", "practice", "exam", "tuner")),
    ("fencing", ("epee", "foil", "lunge", "parry", "piste", "sabre"), ("club", "coach", "bout", "weapon", "tournament")),
    ("moving", ("boxes", "apartment", "landlord", "movers", "lease", "packing"), ("date", "city", "flat", "truck", "deposit")),
    ("volunteering", ("shelter", "charity", "soup", "donations", "shift", "food_bank"), ("place", "shift", "friend", "cause", "event")),
    ("grandmother", ("granny", "grandma", "recipes", "birthday", "nursing", "stories"), ("name", "town", "birthday", "recipe", "health")),
)
SHARED = ("week", "friend", "morning", "weekend", "favourite", "started", "plan", "evening",
          "city", "sister", "summer", "again", "really", "little", "every", "saturday")
FAMILIES = ("user.likes", "story", "plans")  # keys that do not name the topic
CHARACTERS = ("captain-rowan", "mira-vale")


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


def generate(seed: int = SEED, per_topic: int = PER_TOPIC) -> RelevanceWorld:
    rng = random.Random(seed)
    topics = [Topic(*t) for t in TOPICS]
    records: list[MemoryRecord] = []
    topic_of: dict[str, str] = {}
    conversation = "0c6e7d2a-5b0e-4c38-9d51-1f2a3b4c5d6e"
    for t_index, topic in enumerate(topics):
        for i in range(per_topic):
            # Seven in ten name their topic in the key; the rest sit in a shared family.
            named = i < math.ceil(per_topic * 0.7)
            if named:
                key = f"{topic.name}.{topic.facets[i % len(topic.facets)]}" + (
                    f"_{i}" if i >= len(topic.facets) else "")
            else:
                key = f"{FAMILIES[i % len(FAMILIES)]}.note_{t_index}_{i}"
            kind = rng.choice(("user", "user", "character", "conversation"))
            scope = {
                "user": Scope("user"),
                "character": Scope("character", character=rng.choice(CHARACTERS)),
                "conversation": Scope("conversation", conversation=conversation),
            }[kind]
            at = NOW - timedelta(minutes=rng.randrange(1, 60 * 24 * 365))
            record_id = f"{rng.getrandbits(128):032x}"
            records.append(MemoryRecord(
                id=record_id, user=USER, key=key, value=_value(rng, topic, named), scope=scope,
                authority=rng.choice(("rule-extracted", "model-inferred", "user-confirmed")),
                valid_from=at, recorded_at=at, evidence_time=at, version=1,
                confidence=rng.choice((1.0, 0.95, 0.9, 0.7, 0.6)), sources=(f"msg-{record_id}",),
            ))
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
    return rng.choice((
        f"I keep thinking about my {topic.name} this {shared}. What do you remember about the {word}?",
        f"Can we talk about the {topic.name} again? The {word} has been on my mind since the {shared}.",
        f"Remind me what I told you about {topic.name} and the {word}.",
    ))


SMALL_TALK = ("Good evening! It has been a long day.", "Evening. Come in, sit down, tell me everything.")


def plan_for(world: RelevanceWorld, topic: Topic, order: str, rng: random.Random):
    current = PlanMessage("current", 3, "user", message_about(topic, rng))
    history = [PlanMessage("h1", 1, "user", SMALL_TALK[0]), PlanMessage("h2", 2, "assistant", SMALL_TALK[1])]
    return build_plan(
        current=current, history=history, memories=world.memories, memory_excluded=[],
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
