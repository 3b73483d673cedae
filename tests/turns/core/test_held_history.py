"""The history a process holds per conversation (turns.held_history): caught up with the
messages after the held ones and the withheld set read now, it is the history a fresh read
gives (I1, F6), and it keeps the texts a fresh read would read — the rule of
`turns.storage.history_sql`, written out here as the ORM reference reads it — never a
withheld one's. Pure: no database."""

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from turns.held_history import HeldHistories, candidates, keep_history, wanted_texts
from turns.planner import HistoryCandidate
from turns.tokens import estimate_from_bytes


@st.composite
def histories(draw):
    """A conversation's messages oldest first (seqs with gaps), the ones a forget withholds
    now, and where the held part ends."""
    n = draw(st.integers(0, 30))
    gaps = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    seqs, seq = [], 0
    for gap in gaps:
        seq += gap
        seqs.append(seq)
    messages = [
        HistoryCandidate(
            f"m{s:03d}", s, "user" if s % 2 else "assistant", draw(st.integers(0, 400))
        )
        for s in seqs
    ]
    withheld = {m.id for m in messages if draw(st.booleans()) and draw(st.booleans())}
    return messages, withheld, draw(st.integers(0, n))


def flagged(messages, withheld):
    return [replace(m, withheld=m.id in withheld) for m in messages]


def reference_wanted(history, room, n_recent):
    """The texts the ORM reference reads (turns.selectors.read_turn_orm), newest first."""
    running, wanted = 0, []
    admissible = [c for c in history if not c.withheld]
    for newest, c in enumerate(reversed(admissible), start=1):
        running += estimate_from_bytes(c.n_bytes)
        if running <= room or newest <= n_recent:
            wanted.append(c.id)
    return wanted


@given(histories(), st.sets(st.sampled_from([f"m{s:03d}" for s in range(100)])))
def test_it_catches_a_held_history_up_to_the_fresh_one(found, held_then):
    """Whatever the held part withheld when it was read (`held_then`), the held candidates
    and the new ones, flagged by the withheld set of now, are the fresh read's."""
    messages, withheld, split = found
    held = keep_history(flagged(messages[:split], held_then), {}, stamp="s", room=1000, n_recent=2)
    new = flagged(messages[split:], withheld)
    assert candidates(held.candidates, reversed(new), withheld) == flagged(messages, withheld)
    assert held.seq == (messages[split - 1].seq if split else 0)


@given(histories(), st.integers(-1, 3000), st.integers(0, 3))
def test_it_wants_the_texts_a_fresh_read_reads(found, room, n_recent):
    messages, withheld, _ = found
    history = flagged(messages, withheld)
    assert wanted_texts(history, room, n_recent) == reference_wanted(history, room, n_recent)


@given(histories(), st.integers(-1, 3000), st.integers(0, 3))
def test_it_keeps_the_wanted_texts_it_has_and_never_a_withheld_one(found, room, n_recent):
    messages, withheld, _ = found
    history = flagged(messages, withheld)
    texts = {m.id: f"text of {m.id}" for m in messages[::2]}
    kept = keep_history(history, texts, stamp=None, room=room, n_recent=n_recent)
    wanted = set(reference_wanted(history, room, n_recent))
    assert kept.texts == {i: t for i, t in texts.items() if i in wanted}
    assert not kept.texts.keys() & withheld
    assert all(not c.withheld for c in kept.candidates)


def test_it_holds_the_histories_in_a_bounded_lru():
    held = HeldHistories(2)
    entry = keep_history([], {}, stamp=None, room=0, n_recent=0)
    held.put("a", entry), held.put("b", entry)
    assert held.get("a") is entry  # now the most recent
    held.put("c", entry)
    assert held.get("b") is None
    assert held.get("a") is entry and held.get("c") is entry
    held.drop("a")
    assert held.get("a") is None


def test_it_lets_a_users_histories_go_and_keeps_other_users():
    """F7.6: `forget_texts(user)` lets the histories held for that user's conversations go,
    texts and all (the next turn of each reads its history whole, with its texts, in its one
    statement); other users' entries are the very objects they were."""
    held = HeldHistories(8)
    history = [HistoryCandidate("m1", 1, "user", 12, False)]
    entry = keep_history(history, {"m1": "Miso chased a moth"}, stamp="s", room=99, n_recent=0)
    other = keep_history(history, {"m1": "Hello there"}, stamp="s", room=99, n_recent=0)
    held.put("c1", entry, user=1), held.put("c2", entry, user=1), held.put("c3", other, user=2)
    held.forget_texts(1)
    assert held.get("c1") is None and held.get("c2") is None
    assert held.get("c3") is other
    assert held.held_texts() == ["Hello there"]
