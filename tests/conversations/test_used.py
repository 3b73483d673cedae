"""SPEC E2, the pure part: a stored plan snapshot read back in words — what the prompt held,
exactly; a memory forgotten since without its value (F2); the reasons of what was left out;
the boundary decisions; a turn with no plan. No database."""

from __future__ import annotations

from turns.used import LEFT_OUT_WORDS, Held, decision_ids, memory_ids, used

NAMES = {"confirmed": "Confirmed", "likely": "Likely", "uncertain": "Uncertain"}
SNAPSHOT = {
    "memories": ["r1", "r2"],
    "certainty": ["confirmed", "uncertain"],
    "excluded": [["memory", "r3", "superseded"], ["memory", "r4", "unsupported"],
                 ["message", "m1", "budget"]],
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
    return used(snapshot, held=held, label=lambda key: f"<{key}>", certainty_names=NAMES,
                capability_name=lambda name: name.upper(), card=lambda i: f"card:{i}",
                history=lambda i: f"history:{i}", current=current, logged=logged)


def test_it_lists_what_the_prompt_held_with_certainty_and_a_link_to_the_card():
    """E2: label, value, certainty, link — in the plan's order."""
    out = read()
    assert out.planned
    assert [(m.label, m.value, m.certainty, m.link) for m in out.memories] == [
        ("<basil_plant.name>", "Marlowe", "Confirmed", "card:r1"),
        ("<story.letter.status>", "unfinished", "Uncertain", "card:r2"),
    ]
    assert out.history == 2 and out.messages_left_out == 1


def test_left_out_memories_carry_their_reason_in_words_and_link_their_history():
    """E2: left out and why, in plain words; a memory that is not current links its history."""
    out = read()
    assert [(m.label, m.reason, m.link) for m in out.left_out] == [
        ("<basil_plant.name>", LEFT_OUT_WORDS["superseded"], "history:r3"),
        ("<story.letter.outcome>", LEFT_OUT_WORDS["unsupported"], "history:r4"),
    ]


def test_a_memory_forgotten_since_shows_as_forgotten_never_its_value():
    """E2, F2: the value is never shown once forgotten, held or left out."""
    held = {**HELD, "r1": Held("basil_plant.name", "", forgotten_at="3 Aug 2026"),
            "r3": Held("basil_plant.name", "", forgotten_at="3 Aug 2026")}
    out = read(held=held, current=frozenset({"r2"}))
    assert (out.memories[0].value, out.memories[0].gone) == (None, "forgotten since 3 Aug 2026")
    assert out.memories[0].certainty == ""
    assert out.left_out[0].value is None and out.left_out[0].gone == "forgotten since 3 Aug 2026"


def test_a_record_no_longer_kept_is_named_without_anything_of_it():
    out = read(held={k: v for k, v in HELD.items() if k != "r2"})
    assert (out.memories[1].label, out.memories[1].value, out.memories[1].gone) == (
        "A memory", None, "no longer kept")


def test_the_decisions_come_from_the_snapshot_or_for_older_ones_from_the_log():
    """E2: capability and allowed / asked / denied; a snapshot stored before it kept them
    names the decision ids only, read from the decision log."""
    assert [(d.capability, d.effect, d.words) for d in read().decisions] == [
        ("TONE.PLAYFUL", "allow", "allowed")]
    older = {k: v for k, v in SNAPSHOT.items() if k not in ("policy", "certainty")}
    assert decision_ids(older) == ["d1"] and decision_ids(SNAPSHOT) == []
    out = read(snapshot=older, logged={"d1": ("media.voice", "deny")})
    assert [(d.capability, d.words) for d in out.decisions] == [("MEDIA.VOICE", "denied")]
    assert [m.certainty for m in out.memories] == ["", ""]  # not inferred after the fact


def test_a_turn_with_no_plan_says_so():
    assert read(snapshot=None).planned is False
    assert read(snapshot={}).planned is False


def test_it_names_every_memory_once_and_ignores_malformed_rows():
    snapshot = {**SNAPSHOT, "excluded": [*SNAPSHOT["excluded"], ["memory", "r1", "budget"], ["bad"], 7]}
    assert memory_ids(snapshot) == ["r1", "r2", "r3", "r4"]
    assert memory_ids(None) == []
    assert len(read(snapshot=snapshot).left_out) == 3
