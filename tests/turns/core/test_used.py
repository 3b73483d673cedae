"""SPEC E2, the pure part: a stored plan snapshot read back in words — what the prompt held,
exactly; a memory forgotten since without its value (F2); the reasons of what was left out;
the boundary decisions; a turn with no plan. No database."""

from __future__ import annotations

from turns.used import (
    LEFT_OUT_UNKNOWN,
    LEFT_OUT_WORDS,
    Held,
    MoreLeftOut,
    decision_ids,
    memory_ids,
    message_words,
    used,
)

NAMES = {"confirmed": "Confirmed", "likely": "Likely", "uncertain": "Uncertain"}
SNAPSHOT = {
    "memories": ["r1", "r2"],
    "certainty": ["confirmed", "uncertain"],
    "excluded": [
        ["memory", "r3", "superseded"],
        ["memory", "r4", "unsupported"],
        ["message", "m1", "budget"],
    ],
    "history": ["m2", "m3"],
    "decisions": ["d1"],
    "policy": [["d1", "tone.playful", "allow"]],
}
HELD = {
    "r1": Held("basil_plant.name", "Marlowe"),
    "r2": Held("story.letter.status", "unfinished"),
    "r3": Held("basil_plant.name", "Harbor"),
    "r4": Held("story.letter.outcome", "sent"),
}


def read(snapshot=SNAPSHOT, held=HELD, current=frozenset({"r1", "r2"}), logged=None):
    return used(
        snapshot,
        held=held,
        label=lambda key: f"<{key}>",
        certainty_names=NAMES,
        capability_name=lambda name: name.upper(),
        card=lambda i: f"card:{i}",
        history=lambda i: f"history:{i}",
        current=current,
        logged=logged,
    )


def test_it_lists_what_the_prompt_held_with_certainty_and_a_link_to_the_card():
    """E2: label, value, certainty, link — in the plan's order."""
    out = read()
    assert out.planned
    assert [(m.label, m.value, m.certainty, m.link) for m in out.memories] == [
        ("<basil_plant.name>", "Marlowe", "Confirmed", "card:r1"),
        ("<story.letter.status>", "unfinished", "Uncertain", "card:r2"),
    ]
    assert out.history == 2 and out.messages_left_out == 1


def test_it_gives_left_out_memories_their_reason_in_words_and_a_history_link():
    """E2: left out and why, in plain words; a memory that is not current links its history.
    The value Marlowe replaced is not a memory left out: it is Marlowe's own earlier version."""
    out = read()
    assert [(m.label, m.reason, m.link) for m in out.left_out] == [
        ("<story.letter.outcome>", LEFT_OUT_WORDS["unsupported"], "history:r4"),
    ]
    assert out.memories[0].note == "it replaced “Harbor”"


def test_it_shows_a_memory_forgotten_since_as_forgotten_never_its_value():
    """E2, F2: the value is never shown once forgotten, held or left out."""
    held = {
        **HELD,
        "r1": Held("basil_plant.name", "", forgotten_at="3 Aug 2026"),
        "r3": Held("basil_plant.name", "", forgotten_at="3 Aug 2026"),
        "r4": Held("story.letter.outcome", "", forgotten_at="3 Aug 2026"),
    }
    out = read(held=held, current=frozenset({"r2"}))
    assert (out.memories[0].value, out.memories[0].gone) == (None, "forgotten since 3 Aug 2026")
    assert out.memories[0].certainty == "" and out.memories[0].note == ""
    assert out.left_out[0].value is None and out.left_out[0].gone == "forgotten since 3 Aug 2026"
    assert "Harbor" not in str(out) and "Marlowe" not in str(out) and "sent" not in str(out)


def test_it_names_a_record_no_longer_kept_without_anything_of_it():
    out = read(held={k: v for k, v in HELD.items() if k != "r2"})
    assert (out.memories[1].label, out.memories[1].value, out.memories[1].gone) == (
        "A memory",
        None,
        "no longer kept",
    )


def test_it_reads_decisions_from_the_snapshot_or_for_older_ones_from_the_log():
    """E2: capability and allowed / asked / denied; a snapshot stored before it kept them
    names the decision ids only, read from the decision log."""
    assert [(d.capability, d.effect, d.words) for d in read().decisions] == [
        ("TONE.PLAYFUL", "allow", "allowed")
    ]
    older = {k: v for k, v in SNAPSHOT.items() if k not in ("policy", "certainty")}
    assert decision_ids(older) == ["d1"] and decision_ids(SNAPSHOT) == []
    out = read(snapshot=older, logged={"d1": ("media.voice", "deny")})
    assert [(d.capability, d.words) for d in out.decisions] == [("MEDIA.VOICE", "denied")]
    assert [m.certainty for m in out.memories] == ["", ""]  # not inferred after the fact


def test_it_says_so_for_a_turn_with_no_plan():
    assert read(snapshot=None).planned is False
    assert read(snapshot={}).planned is False


def test_it_names_every_memory_once_and_ignores_malformed_rows():
    snapshot = {
        **SNAPSHOT,
        "excluded": [*SNAPSHOT["excluded"], ["memory", "r1", "budget"], ["bad"], 7],
    }
    assert memory_ids(snapshot) == ["r1", "r2", "r3", "r4"]
    assert memory_ids(None) == []
    # r1 was given: its left-out entry is a version of a memory already on a line of its own.
    assert [m.id for m in read(snapshot=snapshot).left_out] == ["r4"]


# ---------------------------------------------------------------------------------------------
# One line per memory, a reason for every line, earlier messages in words (E2, F6)

VERSIONS = {  # basil_plant.name everywhere: Harbor, replaced by Marlowe; dislikes confirmed
    "h1": Held("basil_plant.name", "Harbor", scope_id="user", version=1),
    "h2": Held("basil_plant.name", "Marlowe", scope_id="user", version=2, supersedes="h1"),
    "d1": Held("user.dislikes", "being rushed", scope_id="user", version=1),
    "d2": Held("user.dislikes", "Being rushed", scope_id="user", version=2, supersedes="d1"),
    "t1": Held("user.teas", "green", scope_id="user", version=1, many=True),
    "t2": Held("user.teas", "green", scope_id="user", version=2, supersedes="t1", many=True),
    "t3": Held("user.teas", "mint", scope_id="user", version=3, many=True),
}


def read_versions(snapshot):
    return read(snapshot=snapshot, held=VERSIONS, current=frozenset({"h2", "d2", "t2", "t3"}))


def test_it_folds_a_given_memorys_older_versions_into_its_one_line():
    """E2: the replaced Harbor is not a second "Basil plant's name" line; the given line says
    what it replaced."""
    out = read_versions(
        {
            "memories": ["h2"],
            "certainty": ["confirmed"],
            "excluded": [["memory", "h1", "superseded"]],
        }
    )
    assert [(m.label, m.value, m.note) for m in out.memories] == [
        ("<basil_plant.name>", "Marlowe", "it replaced “Harbor”")
    ]
    assert out.left_out == []


def test_it_reads_a_same_value_confirmation_as_confirmed_not_replaced():
    """E2, SPEC §2 Confirm: the same value again supersedes the old version; that version was
    confirmed, never "a newer value had replaced it" (compared as values are, §1)."""
    out = read_versions(
        {
            "memories": ["d2"],
            "certainty": ["confirmed"],
            "excluded": [["memory", "d1", "superseded"]],
        }
    )
    assert [(m.label, m.note) for m in out.memories] == [("<user.dislikes>", "you confirmed it")]
    assert out.left_out == []
    assert all(LEFT_OUT_WORDS["superseded"] not in (m.reason, m.note) for m in out.memories)


def test_it_gives_a_left_out_memory_one_line_with_its_newest_versions_reason():
    """E2: Harbor (superseded) and Marlowe (budget) are one memory, left out for the budget."""
    out = read_versions(
        {
            "memories": [],
            "certainty": [],
            "excluded": [["memory", "h1", "superseded"], ["memory", "h2", "budget"]],
        }
    )
    assert [(m.id, m.label, m.reason) for m in out.left_out] == [
        ("h2", "<basil_plant.name>", LEFT_OUT_WORDS["budget"])
    ]


def test_it_shows_each_value_of_a_many_key_as_its_own_memory():
    """E2: a `many` key's values are separate memories; a value's confirmation folds into it."""
    out = read_versions(
        {
            "memories": ["t2", "t3"],
            "certainty": ["confirmed", "likely"],
            "excluded": [["memory", "t1", "superseded"]],
        }
    )
    assert [(m.value, m.note) for m in out.memories] == [
        ("green", "you confirmed it"),
        ("mint", ""),
    ]
    assert out.left_out == []


def test_it_gives_every_line_left_out_its_reason_in_words():
    """E2: never a label without its reason — a code the page has no words for still reads as
    a sentence, and a record no longer kept says why it was left out."""
    out = read(
        snapshot={
            **SNAPSHOT,
            "excluded": [["memory", "r4", "a-new-reason"], ["memory", "gone", "expired"]],
        }
    )
    assert [(m.label, m.reason) for m in out.left_out] == [
        ("<story.letter.outcome>", LEFT_OUT_UNKNOWN),
        ("A memory", LEFT_OUT_WORDS["expired"]),
    ]
    assert all(m.reason for m in out.left_out)


def test_it_counts_earlier_messages_in_words():
    """E2: no "0 earlier messages"; what did not fit and what was withheld (F6), each said."""
    assert message_words(0, {}) == ["It was given no earlier messages."]
    assert message_words(1, {}) == ["It was also given 1 earlier message."]
    assert message_words(4, {"budget": 22}) == [
        "It was also given 4 earlier messages; 22 older ones did not fit."
    ]
    assert message_words(0, {"budget": 1}) == [
        "It was given no earlier messages: the earlier one did not fit."
    ]
    assert message_words(2, {"forgotten": 3}) == [
        "It was also given 2 earlier messages.",
        "3 earlier messages were withheld because you asked the companion to forget something they "
        "mention.",
    ]
    assert message_words(0, {"forgotten": 1, "other": 2}) == [
        "It was given no earlier messages.",
        "1 earlier message was withheld because you asked the companion to forget something it "
        "mentions.",
        "2 other earlier messages were left out.",
    ]


def test_it_counts_withheld_messages_of_a_stored_plan_apart_from_the_budget():
    """F6, E2: a snapshot whose `excluded` holds messages withheld as forgotten (stored as
    `[kind, id, reason]`, or in the plan's `{kind, id, reason}` shape) counts them as withheld,
    not as "did not fit"."""
    snapshot = {
        **SNAPSHOT,
        "history": ["m2"],
        "excluded": [
            *SNAPSHOT["excluded"],
            ["message", "m7", "forgotten"],
            {"kind": "message", "id": "m8", "reason": "forgotten"},
            {"kind": "message", "reason": "forgotten"},
        ],
    }
    out = read(snapshot=snapshot)
    assert out.messages_by_reason == {"budget": 1, "forgotten": 3}
    assert out.message_words == [
        "It was also given 1 earlier message; 1 older one did not fit.",
        "3 earlier messages were withheld because you asked the companion to forget something they "
        "mention.",
    ]
    assert memory_ids(snapshot) == ["r1", "r2", "r3", "r4"]


# I9: a plan lists at most 20 entries per kind and reason and counts them all; a plan stored
# before that listed every one. The same plan in both generations:
BUDGET_IDS = [f"r{i}" for i in range(100, 580)]  # in the fill order
MESSAGE_IDS = [f"m{seq}" for seq in range(57, 0, -1)]  # newest first
BOUNDED = {
    **SNAPSHOT,
    "excluded": [
        *(["memory", i, "budget"] for i in BUDGET_IDS[:20]),
        ["memory", "r4", "unsupported"],
        *(["message", i, "budget"] for i in MESSAGE_IDS[:20]),
        *(["message", f"f{n}", "forgotten"] for n in range(3)),
    ],
    "excluded_counts": [
        ["memory", "budget", 480],
        ["memory", "unsupported", 1],
        ["message", "budget", 57],
        ["message", "forgotten", 3],
    ],
}
UNBOUNDED = {
    **SNAPSHOT,
    "excluded": [
        *(["memory", i, "budget"] for i in sorted(BUDGET_IDS)),
        ["memory", "r4", "unsupported"],
        *(["message", i, "budget"] for i in sorted(MESSAGE_IDS)),
        *(["message", f"f{n}", "forgotten"] for n in range(3)),
    ],
}
MANY_HELD = {**HELD, **{i: Held(f"fact.k{i}", f"value {i}") for i in BUDGET_IDS}}


def test_it_says_and_n_more_with_the_reason_where_a_plan_listed_fewer_than_it_counted():
    """I9, E2: a bounded plan's 20 memories left out for the budget each get their line, the
    other 460 one "…and 460 more" line with the reason in words; the earlier messages are
    counted from the plan's totals (57 did not fit, 3 withheld), not from what it lists."""
    out = read(snapshot=BOUNDED, held=MANY_HELD)
    assert [m.id for m in out.left_out] == [*BUDGET_IDS[:20], "r4"]
    assert all(m.reason for m in out.left_out)
    assert out.more_left_out == [MoreLeftOut(460, LEFT_OUT_WORDS["budget"])]
    assert [m.words for m in out.more_left_out] == ["…and 460 more: it did not fit in the prompt"]
    assert out.messages_left_out == 60
    assert out.messages_by_reason == {"budget": 57, "forgotten": 3}
    assert out.message_words == [
        "It was also given 2 earlier messages; 57 older ones did not fit.",
        "3 earlier messages were withheld because you asked the companion to forget something they "
        "mention.",
    ]


def test_it_reads_a_plan_stored_before_the_counts_as_listing_every_entry():
    """I9, E2: a snapshot stored before I9 lists every entry and keeps no counts: each memory
    left out has its line, nothing is said to be unlisted, and the messages are counted from
    its list — the same words as the bounded plan's."""
    out = read(snapshot=UNBOUNDED, held=MANY_HELD)
    assert len(out.left_out) == 481 and all(m.reason for m in out.left_out)
    assert out.more_left_out == []
    assert out.messages_by_reason == {"budget": 57, "forgotten": 3}
    assert out.message_words == read(snapshot=BOUNDED, held=MANY_HELD).message_words
