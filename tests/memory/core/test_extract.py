"""The rule-based extractor and question matcher (SPEC §8). Pure: no database."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.domain import VALUE_MAX, valid_key
from memory.extract import (
    ANSWERS,
    NAME_KEY_SUFFIX,
    Extraction,
    extract,
    is_thing_name_key,
    question_key,
)


def facts(text, last_named_key=None):
    """(key, value, correction) triples, in text order."""
    return [(e.key, e.value, e.correction) for e in extract(text, last_named_key=last_named_key)]


# ---------------------------------------------------------------------------------------------
# The vocabulary table


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        # <thing>.name
        ("the basil plant is named Harbor", "basil_plant.name", "Harbor"),
        ("The basil plant is named Harbor.", "basil_plant.name", "Harbor"),
        ("my basil plant is called Harbor", "basil_plant.name", "Harbor"),
        ("my dog's name is Rex", "dog.name", "Rex"),
        ("my cat is named Ember", "cat.name", "Ember"),
        ("my cat's name is Ember.", "cat.name", "Ember"),
        ("Our cat is called Ember", "cat.name", "Ember"),
        ("I have a dog named Rex", "dog.name", "Rex"),
        ("my new puppy is named Biscuit", "puppy.name", "Biscuit"),
        # user.preferred_name
        ("call me Sam", "user.preferred_name", "Sam"),
        ("Please call me Sam.", "user.preferred_name", "Sam"),
        ("my name is Sam", "user.preferred_name", "Sam"),
        ("My name's Sam!", "user.preferred_name", "Sam"),
        ("I go by Sam", "user.preferred_name", "Sam"),
        ("I like being called Sam", "user.preferred_name", "Sam"),
        # user.avoid_nickname
        ("I dislike being called boss", "user.avoid_nickname", "boss"),
        ("don't call me boss", "user.avoid_nickname", "boss"),
        ("do not call me boss", "user.avoid_nickname", "boss"),
        ("please stop calling me boss", "user.avoid_nickname", "boss"),
        ("I hate being called boss.", "user.avoid_nickname", "boss"),
        ("I don't like it when you call me boss", "user.avoid_nickname", "boss"),
        # user.likes / user.dislikes
        ("I like jazz", "user.likes", "jazz"),
        ("I love rainy days", "user.likes", "rainy days"),
        ("I really like jazz", "user.likes", "jazz"),
        ("I'm a big fan of jazz!", "user.likes", "jazz"),
        ("I dislike being rushed", "user.dislikes", "being rushed"),
        ("I hate mornings", "user.dislikes", "mornings"),
        ("I don't like mornings", "user.dislikes", "mornings"),
        ("I do not like mornings", "user.dislikes", "mornings"),
        ("I can't stand mornings", "user.dislikes", "mornings"),
        # user.lives_in / user.works_at
        ("I live in Boston", "user.lives_in", "Boston"),
        ("I moved to Seattle", "user.lives_in", "Seattle"),
        ("I now live in Boston", "user.lives_in", "Boston"),
        ("I've moved to Seattle", "user.lives_in", "Seattle"),
        ("I'm living in Boston", "user.lives_in", "Boston"),
        ("I work at Acme", "user.works_at", "Acme"),
        ("I work for Acme", "user.works_at", "Acme"),
        ("I'm working at Acme", "user.works_at", "Acme"),
        # people.<name>.*
        ("Marcus moved to Seattle", "people.marcus.lives_in", "Seattle"),
        ("Marcus lives in Seattle", "people.marcus.lives_in", "Seattle"),
        ("Marcus has moved to Seattle", "people.marcus.lives_in", "Seattle"),
        ("Priya works at Acme", "people.priya.works_at", "Acme"),
        ("Priya now works at Acme", "people.priya.works_at", "Acme"),
        ("Priya works for Acme", "people.priya.works_at", "Acme"),
        ("my friend Priya works at Acme", "people.priya.works_at", "Acme"),
        ("Dana is a designer", "people.dana.role", "designer"),
        ("Dana is an engineer", "people.dana.role", "engineer"),
        ("Dana's a designer", "people.dana.role", "designer"),
        ("Dana works as a designer", "people.dana.role", "designer"),
        ("José works at Acme", "people.jose.works_at", "Acme"),
    ],
)
def test_it_extracts_each_row_of_the_vocabulary(text, key, value):
    """SPEC §8: every phrasing of the minimum vocabulary maps to its key, cleaned value, and
    is not a correction."""
    assert facts(text) == [(key, value, False)]


# ---------------------------------------------------------------------------------------------
# Corrections


@pytest.mark.parametrize(
    ("text", "last_named_key", "key", "value"),
    [
        (
            "I renamed it. It is Marlowe now, not Harbor.",
            "basil_plant.name",
            "basil_plant.name",
            "Marlowe",
        ),
        (
            "I renamed the basil plant. It is Marlowe now, not Harbor.",
            None,
            "basil_plant.name",
            "Marlowe",
        ),
        (
            "I renamed the basil plant. It is Marlowe now, not Harbor.",
            "dog.name",
            "basil_plant.name",
            "Marlowe",
        ),
        ("i renamed the basil plant. it is marlowe now", None, "basil_plant.name", "marlowe"),
        ("It is Marlowe now, not Harbor.", "basil_plant.name", "basil_plant.name", "Marlowe"),
        ("It's Marlowe now, not Harbor", "basil_plant.name", "basil_plant.name", "Marlowe"),
        ("I renamed the basil plant to Marlowe", None, "basil_plant.name", "Marlowe"),
        ("I renamed the basil plant Marlowe.", None, "basil_plant.name", "Marlowe"),
        ("I renamed it to Marlowe", "basil_plant.name", "basil_plant.name", "Marlowe"),
        ("i renamed my dog max", "dog.name", "dog.name", "max"),
        ("I renamed my dog. He is Max now.", None, "dog.name", "Max"),
        ("I changed its name to Marlowe", "basil_plant.name", "basil_plant.name", "Marlowe"),
        ("I changed my dog's name to Max", None, "dog.name", "Max"),
        ("Its new name is Marlowe", "basil_plant.name", "basil_plant.name", "Marlowe"),
        ("Actually, my dog's name is Max", None, "dog.name", "Max"),
        ("the basil plant is named Marlowe, not Harbor", None, "basil_plant.name", "Marlowe"),
        ("The basil plant has been renamed to Marlowe", None, "basil_plant.name", "Marlowe"),
        ("Actually, call me Sam", None, "user.preferred_name", "Sam"),
        ("Call me Sam, not Samuel", None, "user.preferred_name", "Sam"),
        ("call me Sam instead of Samuel", None, "user.preferred_name", "Sam"),
        ("My name is actually Sam", None, "user.preferred_name", "Sam"),
        ("Actually, I live in Seattle", None, "user.lives_in", "Seattle"),
        ("I live in Boston, not Seattle", None, "user.lives_in", "Boston"),
        ("Dana is a designer, not an engineer", None, "people.dana.role", "designer"),
        ("Correction: Priya works at Globex", None, "people.priya.works_at", "Globex"),
    ],
)
def test_it_flags_explicit_corrections(text, last_named_key, key, value):
    """SPEC §8: "renamed", "not X" and "actually" make a correction of that key."""
    assert facts(text, last_named_key) == [(key, value, True)]


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("Actually, I like jazz", "user.likes", "jazz"),
        ("I like jazz, not rock", "user.likes", "jazz"),
        ("Actually, don't call me boss", "user.avoid_nickname", "boss"),
    ],
)
def test_it_never_flags_many_valued_keys_as_corrections(text, key, value):
    """SPEC §8 with §1: a new value of a `many` key is a new value slot, not a correction of
    another value (a decision documented in memory.extract)."""
    assert facts(text) == [(key, value, False)]


def test_it_resolves_it_to_the_thing_named_earlier_in_the_same_message():
    """SPEC §8: "it" is the most recently named thing, including one named just before."""
    assert facts("My dog is named Rex. It is Max now, not Rex.", "basil_plant.name") == [
        ("dog.name", "Rex", False),
        ("dog.name", "Max", True),
    ]


@pytest.mark.parametrize(
    ("text", "last_named_key"),
    [
        ("I renamed it. It is Marlowe now, not Harbor.", None),
        ("It is Marlowe now, not Harbor.", None),
        ("Its name is Marlowe", None),
        ("It is Marlowe now, not Harbor.", "user.preferred_name"),
        ("It is Marlowe now, not Harbor.", "people.dana.name"),
        ("I renamed it", "basil_plant.name"),
        ("It is Marlowe now.", "basil_plant.name"),  # no rename, no contrast: not a naming
        ("It is raining now, not snowing.", "basil_plant.name"),  # not name-like
        ("It is a plant", "basil_plant.name"),
        ("She is Marlowe now, not Harbor.", "basil_plant.name"),  # only "it", outside a rename
    ],
)
def test_it_yields_nothing_when_it_cannot_be_resolved(text, last_named_key):
    """SPEC §8: an unresolvable "it" (or a pronoun that is not about the named thing) yields
    nothing for that sentence; pronouns never become keys."""
    assert facts(text, last_named_key) == []


# ---------------------------------------------------------------------------------------------
# What yields nothing


@pytest.mark.parametrize(
    "text",
    [
        # no subject
        "works at google",
        "moved to Seattle",
        "lives in Boston",
        "is a designer",
        # pronoun or common-word subjects
        "She works at Acme",
        "he lives in Boston",
        "They moved to Seattle",
        "It is a designer",
        "This is a test",
        "There is a cat",
        "Everyone is a critic",
        "Nobody works at Acme",
        "We moved to Seattle",
        "You are the night caretaker.",
        "Today is a good day",
        # not a role
        "I am tired",
        "Marlowe is doing well",
        "Dana is happy",
        "Boston is a great city",
        "Rex is a good boy",
        # negated facts
        "I don't live in Boston anymore",
        "I do not work at Acme",
        "I no longer live in Boston",
        "I never lived in Boston",
        "I don't love jazz",
        "Dana is not a designer",
        # meaningless values
        "I love you",
        "I like it",
        "call me tomorrow",
        "Can you call me later?",
        "The basil plant is named after my grandmother",
        "I don't mind being called boss",
        "I'd like a coffee",
        "",
        "   ",
        "...",
    ],
)
def test_it_yields_nothing_without_a_clear_fact(text):
    """SPEC §8: subject-less sentences, pronoun subjects, adjectives, negations and
    non-name values yield nothing."""
    assert facts(text) == []


# ---------------------------------------------------------------------------------------------
# Most specific wins


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I dislike being called boss", [("user.avoid_nickname", "boss", False)]),
        ("don't call me boss", [("user.avoid_nickname", "boss", False)]),
        ("I don't like being called boss", [("user.avoid_nickname", "boss", False)]),
        ("I like being called Sam", [("user.preferred_name", "Sam", False)]),
        ("My name is Sam", [("user.preferred_name", "Sam", False)]),
        ("The basil plant is named Harbor", [("basil_plant.name", "Harbor", False)]),
        (
            "Don't call me boss, call me Sam.",
            [("user.avoid_nickname", "boss", False), ("user.preferred_name", "Sam", False)],
        ),
    ],
)
def test_it_lets_the_most_specific_rule_win(text, expected):
    """SPEC §8: when patterns overlap the most specific wins ("I dislike being called boss"
    is only an avoided nickname; "don't call me boss" is no preferred name)."""
    assert facts(text) == expected


# ---------------------------------------------------------------------------------------------
# Several facts, splitting, cleaning


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "My name is Sam and I live in Boston. Priya works at Acme; Marcus moved to Seattle!",
            [
                ("user.preferred_name", "Sam", False),
                ("user.lives_in", "Boston", False),
                ("people.priya.works_at", "Acme", False),
                ("people.marcus.lives_in", "Seattle", False),
            ],
        ),
        (
            "Priya works at Acme, and Dana is a designer but Marcus lives in Boston",
            [
                ("people.priya.works_at", "Acme", False),
                ("people.dana.role", "designer", False),
                ("people.marcus.lives_in", "Boston", False),
            ],
        ),
        (
            "I love rainy days\nI hate mornings",
            [("user.likes", "rainy days", False), ("user.dislikes", "mornings", False)],
        ),
        (
            "My dog is named Rex and my cat is named Ember",
            [("dog.name", "Rex", False), ("cat.name", "Ember", False)],
        ),
        (
            "I like jazz and Priya works at Acme",
            [("user.likes", "jazz", False), ("people.priya.works_at", "Acme", False)],
        ),
        (
            "I moved to Seattle. Actually I moved to Portland.",
            [("user.lives_in", "Seattle", False), ("user.lives_in", "Portland", True)],
        ),
        ("I like jazz. I like jazz!", [("user.likes", "jazz", False)]),
        # Continuity protocol setup: a name and a preference, nothing else.
        (
            "We meet every Thursday at a quiet rooftop greenhouse. You are the night caretaker. "
            "The basil plant is named Harbor. I dislike being rushed. I am trying to finish a "
            "short letter but do not want to send it tonight. Keep the conversation warm, "
            "specific, and unhurried.",
            [("basil_plant.name", "Harbor", False), ("user.dislikes", "being rushed", False)],
        ),
    ],
)
def test_it_extracts_several_facts_in_text_order(text, expected):
    """SPEC §8: a message is split into sentences and clauses; each yields its own fact."""
    assert facts(text) == expected


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I live in Portland, Oregon.", "user.lives_in", "Portland, Oregon"),
        ("I live in St. Louis", "user.lives_in", "St. Louis"),
        ("I like rock and roll", "user.likes", "rock and roll"),
        ("my dog is named Salt and Pepper", "dog.name", "Salt and Pepper"),
        ("Dana is a designer at Acme", "people.dana.role", "designer at Acme"),
    ],
)
def test_it_does_not_split_inside_a_value(text, key, value):
    """SPEC §8: a comma or "and" only splits when what follows is a fact of its own."""
    assert facts(text) == [(key, value, False)]


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I live in Boston now.", "user.lives_in", "Boston"),
        ("I live in Boston now!!!", "user.lives_in", "Boston"),
        ("Call me Sam again, please.", "user.preferred_name", "Sam"),
        ("don't call me boss anymore!", "user.avoid_nickname", "boss"),
        ("I like jazz too.", "user.likes", "jazz"),
        ("I like jazz as well", "user.likes", "jazz"),
        ("I like jazz 🎷🎶", "user.likes", "jazz"),
        ("the basil plant is named “Harbor”.", "basil_plant.name", "Harbor"),
        ("call me 'Sam'!", "user.preferred_name", "Sam"),
        ("I moved to Seattle last year with my wife", "user.lives_in", "Seattle"),
        ("Marcus just moved to Seattle 2 years ago", "people.marcus.lives_in", "Seattle"),
        ("I work at Acme as a designer.", "user.works_at", "Acme"),
        ("I live in New York City now.", "user.lives_in", "New York City"),
        ("I hate it when you rush me", "user.dislikes", "when you rush me"),
        ("I live   in\tBoston", "user.lives_in", "Boston"),
    ],
)
def test_it_cleans_punctuation_and_filler_from_values(text, key, value):
    """SPEC §8: trailing punctuation and filler ("now", "again", "anymore") are dropped."""
    assert facts(text) == [(key, value, False)]


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("priya works at stripe", "people.priya.works_at", "stripe"),
        ("dana is a designer", "people.dana.role", "designer"),
        ("marcus moved to seattle", "people.marcus.lives_in", "seattle"),
        ("i like jazz", "user.likes", "jazz"),
        ("i dont like mornings", "user.dislikes", "mornings"),
        ("  i   LIVE in   boston   now!!! ", "user.lives_in", "boston"),
        ("the basil plant is named harbor", "basil_plant.name", "harbor"),
        ("PRIYA WORKS AT ACME", "people.priya.works_at", "ACME"),
    ],
)
def test_it_reads_lowercase_and_messy_whitespace(text, key, value):
    """SPEC §8: lowercase input works, and the speaker's case is kept in the value."""
    assert facts(text) == [(key, value, False)]


def test_it_ignores_text_inside_code_fences():
    """SPEC §8 (decision): fenced code is not the user talking about themselves."""
    text = "I live in Boston ```I live in Paris``` I work at Acme\n```\nI like rock"
    assert facts(text) == [("user.lives_in", "Boston", False), ("user.works_at", "Acme", False)]


def test_it_reports_the_span_of_each_clause():
    """SPEC §8: spans are offsets into the caller's text, for debugging."""
    text = "Hi! I like jazz. Priya works at Acme."
    found = extract(text)
    assert [text[e.span[0] : e.span[1]] for e in found] == ["I like jazz", "Priya works at Acme"]
    assert all(isinstance(e, Extraction) for e in found)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我喜欢爵士乐", []),
        ("🎷🎷🎷", []),
        ("👩\u200d👩\u200d👧 lives in Boston", []),
        ("王 works at Acme", []),
        ("I like 抹茶 🍵", [("user.likes", "抹茶", False)]),
        ("私はボストンに住んでいます。I live in 東京。", [("user.lives_in", "東京", False)]),
    ],
)
def test_it_survives_emoji_and_cjk(text, expected):
    """SPEC §8: emoji and CJK never crash the extractor; keys stay ASCII slugs."""
    assert facts(text) == expected


# ---------------------------------------------------------------------------------------------
# Helpers and questions


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("basil_plant.name", True),
        ("dog.name", True),
        ("user.preferred_name", False),
        ("user.name", False),
        ("people.dana.name", False),
        ("people.dana.role", False),
        (".name", False),
        ("name", False),
        ("", False),
        (None, False),
    ],
)
def test_it_recognises_thing_name_keys(key, expected):
    """SPEC §8: the caller finds the most recently named thing by its `<thing>.name` key."""
    assert NAME_KEY_SUFFIX == ".name"
    assert is_thing_name_key(key) is expected


@pytest.mark.parametrize(
    ("question", "key"),
    [
        ("Where does Priya work?", "people.priya.works_at"),
        ("where does priya work now?", "people.priya.works_at"),
        ("Who does Priya work for?", "people.priya.works_at"),
        ("Where does Marcus live?", "people.marcus.lives_in"),
        ("What is Dana's job?", "people.dana.role"),
        ("What's Dana's role?", "people.dana.role"),
        ("What does Dana do?", "people.dana.role"),
        ("What does Dana do for a living?", "people.dana.role"),
        ("Where do I live?", "user.lives_in"),
        ("Where do I work?", "user.works_at"),
        ("What should you call me?", "user.preferred_name"),
        ("What is my name?", "user.preferred_name"),
        ("what's my name", "user.preferred_name"),
        ("What shouldn't you call me?", "user.avoid_nickname"),
        ("What is the basil plant's name?", "basil_plant.name"),
        ("What is my dog's name?", "dog.name"),
        ("What is my dog called?", "dog.name"),
        ("What is the name of my cat?", "cat.name"),
        ("What do I like?", "user.likes"),
        ("What do I dislike?", "user.dislikes"),
        ("What don't I like?", "user.dislikes"),
    ],
)
def test_it_maps_simple_questions_to_keys(question, key):
    """SPEC §8: `GET /memory/ask` answers by key lookup."""
    assert question_key(question) == key


@pytest.mark.parametrize(
    "question",
    [
        "How are you?",
        "Where does she work?",
        "What is it called?",
        "What does he do?",
        "Where is everyone?",
        "",
        "?",
        "🎷",
        "什么?",
    ],
)
def test_it_answers_unknown_questions_with_none(question):
    """SPEC §8: an unknown question has no key (the API answers `{"answer": null}`)."""
    assert question_key(question) is None


def test_it_exposes_the_question_patterns():
    """SPEC §8: ANSWERS is the table question_key reads; every template is a valid key shape."""
    assert ANSWERS
    for _pattern, template in ANSWERS:
        assert valid_key(template.format(person="dana", thing="dog"))


# ---------------------------------------------------------------------------------------------
# Properties

_VOCAB = st.sampled_from(
    [
        "I",
        "i",
        "my",
        "the",
        "it",
        "It",
        "is",
        "named",
        "called",
        "renamed",
        "not",
        "now",
        "Priya",
        "works",
        "at",
        "Acme",
        "lives",
        "in",
        "moved",
        "to",
        "Dana",
        "a",
        "an",
        "designer",
        "like",
        "love",
        "hate",
        "don't",
        "call",
        "me",
        "boss",
        "name",
        "dog's",
        "basil",
        "plant",
        "actually",
        "and",
        "but",
        ",",
        ".",
        "!",
        "?",
        ";",
        "\n",
        "```",
        "🎷",
        "東京",
        "'",
        "’s",
        "Marlowe",
        "anymore",
        "again",
    ]
)
_TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(_VOCAB, max_size=40).map(" ".join),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=_TEXT, last=st.sampled_from([None, "basil_plant.name", "dog.name", "user.likes"]))
def test_it_never_raises_and_only_yields_valid_facts(text, last):
    """SPEC §8 with §1: on any text, extract() is deterministic, every key is valid and every
    value is non-empty and at most 2,000 characters."""
    first = extract(text, last_named_key=last)
    assert extract(text, last_named_key=last) == first
    for item in first:
        assert valid_key(item.key)
        assert item.value.strip() == item.value
        assert 0 < len(item.value) <= VALUE_MAX
        assert 0 <= item.span[0] < item.span[1] <= len(text)
        assert isinstance(item.correction, bool)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(q=st.text(max_size=200))
def test_it_matches_questions_without_raising(q):
    """SPEC §8: question_key() never raises and only returns valid keys."""
    key = question_key(q)
    assert key is None or valid_key(key)
