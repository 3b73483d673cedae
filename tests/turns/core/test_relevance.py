"""The relevance order of the memory section (SPEC §7, I6) and the `use` switch in the pure
planner (I8); the properties are in test_relevance_properties.py. No database: every input
is a plain value."""

import hashlib
import math
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turns.planner as planner_module
import turns.relevance as relevance_module
from config.errors import ValidationError
from memory.domain import RESOLVER_VERSION
from tests.turns.core.relevance_builders import T0, cur, ids, legacy_hash, mem, plan
from turns.planner import HistoryCandidate, PlanMessage, PlanParams, build_plan, memory_cap
from turns.relevance import bm25_scores, document_terms, terms
from turns.stopwords import STOPWORDS, STOPWORDS_VERSION
from turns.tokens import estimate_memory


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("Ｈａｒｂｏｒ", ["harbor"], id="nfkc-fullwidth"),
        pytest.param("ﬁre ﬂower", ["fire", "flower"], id="nfkc-ligatures"),
        pytest.param("Ⅻ x² ①②", ["xii", "x2", "12"], id="nfkc-numerals-and-superscripts"),
        pytest.param("cafe\u0301 CAFÉ", ["café", "café"], id="nfkc-composes-accents"),
        pytest.param("MARLOWE Marlowe marlowe", ["marlowe"] * 3, id="casefold"),
        pytest.param("Straße STRASSE", ["strasse", "strasse"], id="casefold-sharp-s"),
        pytest.param("basil_plant.name", ["basil", "plant", "name"], id="key-punctuation"),
        pytest.param("rock-n-roll!! (live)…", ["rock", "roll", "live"], id="punctuation"),
        pytest.param(
            "Marlowe's letter—unsent", ["marlowe", "letter", "unsent"], id="apostrophe-dash"
        ),
        pytest.param("tab\tnew\nline", ["tab", "new", "line"], id="whitespace"),
        pytest.param("🌿basil🌿", ["basil"], id="emoji-split"),
        pytest.param("room 42b, floor 3", ["room", "42b", "floor"], id="digits"),
        pytest.param("2026-08-05", ["2026", "08", "05"], id="date-digits"),
        pytest.param("a b c I x 7 go", ["go"], id="one-character-terms"),
        pytest.param("What is the name of the plant?", ["name", "plant"], id="stopwords"),
        pytest.param("I don't know, I've been there", ["know"], id="contraction-stems"),
        pytest.param("THE AND Of", [], id="stopwords-after-casefold"),
        pytest.param("Привет, мир", ["привет", "мир"], id="cyrillic"),
        pytest.param("今日は温室で", ["今日は温室で"], id="cjk-run"),
        pytest.param("ab\U00010107cd", ["ab", "cd"], id="other-numerics-split"),
    ],
)
def test_it_extracts_terms_by_the_i6_rules(text, expected):
    """I6: NFKC, casefold, split on every character that is not a letter or digit, drop terms
    of one character and stopwords."""
    assert terms(text) == expected


def test_it_builds_a_memory_document_from_label_value_and_key():
    """I6: the document is the terms of the label, value and key (basil_plant.name → basil,
    plant, name)."""
    pm = mem("r1", "Harbor", key="basil_plant.name", label="Basil plant's name")
    assert document_terms(pm) == ["basil", "plant", "name", "harbor", "basil", "plant", "name"]


def test_it_pins_the_stopword_list_to_its_version():
    """I6: the stopword list's version is a plan parameter, so the list may only change with
    it: a list changed without a new version (and a new pin here) fails this test."""
    digest = hashlib.sha256(" ".join(sorted(STOPWORDS)).encode()).hexdigest()
    assert (STOPWORDS_VERSION, len(STOPWORDS), digest) == (
        "en-2026.1",
        161,
        "875a4afd6f660b65161eff053fc99daf91d58a73d71b7685df29e52851b55d18",
    )
    # Listed as the term rules leave words: casefolded letters, more than one character.
    assert all(len(w) > 1 and w == w.casefold() and w.isalpha() for w in STOPWORDS)
    assert {"the", "what", "don", "ve"} <= STOPWORDS
    assert not {"letter", "name", "plant", "sent", "unsent"} & STOPWORDS


DOCS = [
    ["basil", "plant", "name", "harbor"],
    ["dog", "name", "rex"],
    ["letter", "status", "unfinished"],
]


@pytest.mark.parametrize(
    ("query", "documents", "expected"),
    [
        # N = 3, avgdl = 10/3. idf(basil) = ln(1 + 2.5/1.5) = 0.980829; idf(name) =
        # ln(1 + 1.5/2.5) = 0.470004. d1: |d| = 4, k1·(1 − b + b·4/avgdl) = 1.38, so
        # 0.980829·2.2/2.38 + 0.470004·2.2/2.38 = 0.906649 + 0.434457 = 1.341106;
        # d2: |d| = 3, 1.11, 0.470004·2.2/2.11 = 0.490051; d3 has neither term.
        pytest.param(["basil", "name"], DOCS, [1.341106, 0.490051, 0.0], id="two-terms"),
        pytest.param(
            ["name", "basil", "name", "basil"],
            DOCS,
            [1.341106, 0.490051, 0.0],
            id="distinct-query-terms-only",
        ),
        pytest.param(
            ["basil", "name", "moon"],
            DOCS,
            [1.341106, 0.490051, 0.0],
            id="unknown-term-adds-nothing",
        ),
        # N = 2, avgdl = 2, idf = ln(1 + 1.5/1.5) = ln 2; tf = 2, |d| = 3: 1.2·(0.25 + 1.125)
        # = 1.65, so ln 2 · 2 · 2.2 / (2 + 1.65) = 0.835575.
        pytest.param(["basil"], [["basil", "basil", "plant"], ["dog"]], [0.835575, 0.0], id="tf-2"),
        # Every document holds the term: idf = ln(1 + 0.5/2.5) = 0.182322, |d| = avgdl = 1:
        # 0.182322·2.2/2.2.
        pytest.param(["tea"], [["tea"], ["tea"]], [0.182322, 0.182322], id="common-term"),
        pytest.param([], DOCS, [0.0, 0.0, 0.0], id="no-query-terms"),
        pytest.param(["basil"], [[], []], [0.0, 0.0], id="empty-documents"),
        pytest.param(["basil"], [], [], id="no-documents"),
    ],
)
def test_it_scores_bm25_as_the_spec_gives_it(query, documents, expected):
    """I6: Okapi BM25, k1 = 1.2, b = 0.75, idf = ln(1 + (N − n + 0.5)/(n + 0.5)), rounded to
    6 decimals."""
    assert bm25_scores(query, documents) == expected


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(
        st.lists(
            st.sampled_from(
                list("abcXYZ019 _.-'!é")
                + ["ß", "Ⅻ", "ﬁ", "İ", "\u0301", "漢", "😀", "the ", "and ", "letter "]
            ),
            max_size=12,
        ).map("".join),
        max_size=8,
    ),
    st.text(max_size=40),
)
def test_it_orders_by_the_same_scores_as_bm25_of_the_documents(values, query_text):
    """I6: the planner's fast scoring (lengths and query-term counts, ASCII shortcuts) gives
    exactly `bm25_scores` of the memories' documents, for any text."""
    memories = [
        mem(f"r{i}", value or "x", key=f"k.k{i % 3}", label=f"Label {value[:3]}")
        for i, value in enumerate(values)
    ]
    query = relevance_module.query_terms(query_text, ["letter and the basil"])
    _, scores = relevance_module.relevance_order(memories, query, frozenset())
    assert scores == bm25_scores(query, [document_terms(pm) for pm in memories])


@given(st.text(max_size=60))
def test_it_counts_terms_the_same_way_on_the_fast_path(text):
    """I6: the hot path's term count and candidates agree with `terms`."""
    count, candidates = relevance_module._counted_terms(text)
    assert count == len(terms(text))
    assert sorted(t for t in candidates if t not in STOPWORDS) == sorted(terms(text))


def test_it_rounds_scores_to_six_decimals():
    scores = bm25_scores(["basil", "name"], DOCS)
    assert all(s == round(s, 6) for s in scores)
    assert scores[0] == round(math.log(8 / 3) * 2.2 / 2.38 + math.log(1.6) * 2.2 / 2.38, 6)


LETTER = mem(
    "r-letter",
    "unfinished; not to be sent tonight",
    key="story.letter.status",
    label="Story letter: status",
    at=T0 - timedelta(days=3),
)

PLANT = mem("r-plant", "Marlowe", key="basil_plant.name", label="Basil plant's name", at=T0)

JAZZ = mem("r-jazz", "jazz", key="user.likes", label="Likes", at=T0 - timedelta(days=1))

NAME = mem(
    "r-name",
    "Sam",
    key="user.preferred_name",
    label="Preferred name",
    certainty="confirmed",
    at=T0 - timedelta(days=9),
)

I3_ORDER = [PLANT, JAZZ, LETTER]  # as the projection gives them: newest first


def test_it_keeps_the_certainty_order_by_default():
    """I6: `certainty` (the default) is the I3 order, with no relevance."""
    p = plan(I3_ORDER, order="certainty")
    assert ids(p) == ["r-plant", "r-jazz", "r-letter"]
    assert p.relevance == (None, None, None)
    assert p.memory_order == "certainty"


def test_it_puts_the_most_relevant_memory_first():
    """I6: by score, highest first; ties and zero scores keep the I3 order."""
    p = plan(I3_ORDER, content="Did I ever send the letter?")
    assert ids(p) == ["r-letter", "r-plant", "r-jazz"]
    assert p.relevance[0] > 0 and p.relevance[1:] == (0.0, 0.0)


def test_it_puts_pinned_keys_first_whatever_their_score():
    """I6: pinned keys first (the registry's flag), then score."""
    p = plan(
        [*I3_ORDER, NAME], content="Did I ever send the letter?", pinned={"user.preferred_name"}
    )
    assert ids(p) == ["r-name", "r-letter", "r-plant", "r-jazz"]
    assert p.relevance[0] == 0.0


def test_it_fills_what_is_left_with_zero_score_memories():
    """I6: memories with score 0 still fill what is left of the memory share; a relevant one
    that does not fit is excluded and smaller ones are still tried."""
    long_letter = mem("r-long", "the letter " + "x" * 400, key="story.letter.draft", at=T0)
    cap = estimate_memory(PLANT.label, PLANT.value) + estimate_memory(LETTER.label, LETTER.value)
    p = plan([long_letter, *I3_ORDER], content="the letter?", budget=cap * 10, share=0.1)
    assert memory_cap(PlanParams(budget=cap * 10, memory_share=0.1)) == cap
    assert ids(p) == ["r-letter", "r-plant"]
    assert ("memory", "r-long", "budget") in p.excluded
    assert ("memory", "r-jazz", "budget") in p.excluded


def test_it_uses_the_last_two_history_messages_of_either_role():
    """I6: the query is the current message plus the last 2 messages before it (both
    roles); an older message does not count."""
    history = [
        PlanMessage("h1", 1, "user", "I love jazz."),
        PlanMessage("h2", 2, "assistant", "Tell me more."),
        PlanMessage("h3", 3, "user", "Later."),
    ]
    p = plan(I3_ORDER, content="Hm.", history=history)
    assert ids(p) == ["r-plant", "r-jazz", "r-letter"] and p.relevance == (0.0, 0.0, 0.0)
    history[1] = PlanMessage("h2", 2, "assistant", "What about your letter?")
    p = plan(I3_ORDER, content="Hm.", history=history)
    assert ids(p) == ["r-letter", "r-plant", "r-jazz"] and p.relevance[0] > 0
    history[2] = PlanMessage("h3", 3, "user", "And jazz.")
    p = plan(I3_ORDER, content="Hm.", history=history)
    assert ids(p)[2] == "r-plant" and all(s > 0 for s in p.relevance[:2]) and p.relevance[2] == 0.0


def test_it_gives_the_same_plan_from_candidates_and_fetched_content():
    """I6 with the size-only history path: the two messages before the current one are
    fetched for the query, and the plan equals the one built from the whole history."""
    history = [
        PlanMessage(f"h{i}", i, "user" if i % 2 else "assistant", text)
        for i, text in enumerate(["about jazz", "the letter again", "and the basil plant"], 1)
    ]
    fetched: list[list[str]] = []

    def fetch(wanted):
        fetched.append(list(wanted))
        return {m.id: m.content for m in history if m.id in wanted}

    params = PlanParams(budget=400, memory_order="relevance")
    whole = build_plan(
        current=cur("Hm."),
        history=history,
        memories=I3_ORDER,
        memory_excluded=[],
        params=params,
        resolver_version=RESOLVER_VERSION,
    )
    sized = build_plan(
        current=cur("Hm."),
        history=(),
        memories=I3_ORDER,
        memory_excluded=[],
        params=params,
        resolver_version=RESOLVER_VERSION,
        fetch_content=fetch,
        history_candidates=[
            HistoryCandidate(m.id, m.seq, m.role, len(m.content.encode())) for m in history
        ],
    )
    assert sized == whole
    assert fetched[0] == ["h3", "h2"]
    assert ids(whole)[:2] == ["r-plant", "r-letter"]


def test_it_refuses_an_unknown_memory_order():
    with pytest.raises(ValidationError) as info:
        plan(I3_ORDER, order="recency")
    assert list(info.value.errors) == ["memory_order"]


def test_it_excludes_every_projected_memory_when_use_is_off():
    """I8: with `use` off every projected memory goes to `excluded` with reason `memory-off`,
    the memory section is empty, and the projection's own exclusions keep their reasons."""
    for order in ("certainty", "relevance"):
        p = plan(I3_ORDER, use=False, order=order, excluded=[("r-old", "superseded")])
        assert p.memories == () and p.memory_tokens == 0 and p.relevance == ()
        assert sorted(e for e in p.excluded if e[0] == "memory") == [
            ("memory", "r-jazz", "memory-off"),
            ("memory", "r-letter", "memory-off"),
            ("memory", "r-old", "superseded"),
            ("memory", "r-plant", "memory-off"),
        ]


def test_it_covers_memory_order_and_the_stopword_version_in_the_hash(monkeypatch):
    """I6: `memory_order` and the stopword list's version are plan parameters covered by
    `plan_hash`; a certainty plan hashes exactly as before."""
    certainty = plan(I3_ORDER, order="certainty", content="Hm.")
    relevance = plan(I3_ORDER, order="relevance", content="Hm.")
    assert ids(certainty) == ids(relevance)  # the same memories in the same order …
    assert certainty.plan_hash != relevance.plan_hash  # … but other parameters
    assert certainty.plan_hash == legacy_hash(certainty, PlanParams(budget=10_000))
    monkeypatch.setattr(planner_module, "STOPWORDS_VERSION", "en-next")
    assert plan(I3_ORDER, order="relevance", content="Hm.").plan_hash != relevance.plan_hash
    assert plan(I3_ORDER, order="certainty", content="Hm.").plan_hash == certainty.plan_hash
