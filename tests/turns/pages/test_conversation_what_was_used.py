"""SPEC E2 on the transcript: under each companion reply a closed "What the companion used"
section, drawn from that turn's stored plan — the memories the prompt held (label, value,
certainty, a link to the card), those left out and why, the boundary decisions — exactly
what the prompt held; a memory forgotten since shows as forgotten, never its value (F2); a
turn with no plan says so. Read in a constant number of queries."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.scopes import Scope
from memory.forgetting import memory_forget
from memory.models import MemoryRecord, MemorySource
from memory.services import memory_assert, memory_confirm
from tests.factories import MessageFactory, user_facts
from tests.helpers import text
from turns.creation import turn_create
from turns.planner import PlanParams
from turns.plans import turn_prompt_plan
from turns.replies import turn_commit_reply
from turns.used import LEFT_OUT_WORDS

pytestmark = pytest.mark.django_db


def planned_turn(conv, key, content, *, capabilities=(), reply="A reply."):
    turn = turn_create(
        conversation_id=conv.pk,
        turn_key=key,
        content=content,
        plan=PlanParams(budget=2000, capabilities=tuple(capabilities)),
    ).turn
    turn_commit_reply(turn_id=turn.pk, content=reply)
    return turn


def used_section(html: str, reply_id: str) -> str:
    found = re.search(rf'<details class="used" id="used-{reply_id}">(.*?)</details>', html, re.S)
    assert found, f"no 'What the companion used' under reply {reply_id}"
    return found.group(0)


def reply_of(turn) -> str:
    turn.refresh_from_db()
    return str(turn.reply_message_id)


def test_it_shows_under_each_reply_what_its_prompt_held(page, sam, conv):
    """E2: label, value, certainty and a link to the card of each memory the plan held; the
    boundary decision; the section is closed (<details> without `open`)."""
    planned_turn(conv, "t1", "My dog's name is Rex. I like green tea.")
    turn = planned_turn(
        conv, "t2", "What is my dog called?", capabilities=["tone.playful"], reply="Rex, of course."
    )
    html = page.get(f"/conversations/{conv.pk}/").content.decode()
    section = used_section(html, reply_of(turn))
    assert '<details class="used" id="used-' in section and " open" not in section.split(">")[0]
    assert "What the companion used" in section
    dog = MemoryRecord.objects.get(user=sam, key="dog.name")
    assert f'href="/memories/?card={dog.pk}#m-{dog.pk}"' in section
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section))
    assert "Rex" in words and "green tea" in words
    # The rules extract both from sam's own words with a confidence of 0.85 or more: likely (P2).
    assert turn.plan_snapshot["certainty"] == ["likely", "likely"]
    assert "Dog's name : Rex Likely" in words.replace("&#x27;", "'")
    assert "A playful tone" in words and "asked you first" in words


def test_it_keeps_certainty_and_decisions_beside_the_ids_in_the_snapshot(sam, conv):
    """E2: the stored plan keeps, per memory, the certainty it was given with, and each
    decision's capability and effect — ids and codes, never text."""
    turn = planned_turn(conv, "t1", "My dog's name is Rex.", capabilities=["tone.playful"])
    snapshot = turn.plan_snapshot
    assert len(snapshot["certainty"]) == len(snapshot["memories"]) == 1
    assert snapshot["policy"] == [[snapshot["decisions"][0], "tone.playful", "ask"]]
    assert "Rex" not in str(snapshot)
    # The GET plan keeps them too, and its hash is the plan's.
    planned = turn_prompt_plan(turn_id=turn.pk, budget=2000, capabilities=("tone.playful",))
    turn.refresh_from_db()
    assert turn.plan_snapshot["plan_hash"] == planned.plan.plan_hash == turn.plan_hash
    assert turn.plan_snapshot["policy"][0][1:] == ["tone.playful", "ask"]


def test_it_shows_a_memory_forgotten_since_as_forgotten_never_its_value(page, sam, conv):
    """E2, F2: after the user forgets what a reply used, the section names the memory as
    "forgotten since …" and its value is nowhere on the page."""
    planned_turn(conv, "t1", "My dog's name is Rex.")
    turn = planned_turn(conv, "t2", "What is my dog called?")
    dog = MemoryRecord.objects.get(user=sam, key="dog.name")
    memory_forget(record_id=dog.pk, user=sam)
    response = page.get(f"/conversations/{conv.pk}/")
    section = used_section(response.content.decode(), reply_of(turn))
    assert "forgotten since" in section
    assert "Rex" not in section


def test_it_says_why_memories_were_left_out_in_plain_words(page, sam, conv):
    """E2: a memory left out of the prompt is listed with its reason in words (P1: a summary
    with no message behind it)."""
    memory_assert(
        user=sam,
        key="story.letter.outcome",
        value="sent",
        scope=Scope("user"),
        authority="model-inferred",
        confidence=0.95,
    )
    turn = planned_turn(conv, "t1", "Tell me a story.")
    section = used_section(page.get(f"/conversations/{conv.pk}/").content.decode(), reply_of(turn))
    assert "Left out" in section and "no message of yours backs it up" in section
    assert ">sent<" not in section  # a left-out memory's value is not shown


def test_it_says_so_for_a_reply_without_a_plan(page, sam, conv):
    """E2: a turn with no stored plan says there is nothing to show."""
    turn = turn_create(conversation_id=conv.pk, turn_key="t1", content="Hello.").turn
    turn_commit_reply(turn_id=turn.pk, content="Hello to you.")
    section = used_section(page.get(f"/conversations/{conv.pk}/").content.decode(), reply_of(turn))
    assert "No prompt plan was kept for this reply" in section


def test_it_reads_what_was_used_in_constant_queries(page, sam, conv):
    """E2: one selector; the query count does not grow with the number of replies."""
    planned_turn(conv, "t1", "My dog's name is Rex.", capabilities=["tone.playful"])
    url = f"/conversations/{conv.pk}/"
    page.get(url)
    with CaptureQueriesContext(connection) as few:
        page.get(url)
    for n in range(2, 8):
        planned_turn(conv, f"t{n}", f"I like tea number {n}.", capabilities=["tone.playful"])
    page.get(url)
    with CaptureQueriesContext(connection) as many:
        response = page.get(url)
    assert text(response).count("What the companion used") == 7
    assert len(many) == len(few), [q["sql"][:80] for q in many.captured_queries]


def words_of(section: str) -> str:
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section)))


def test_it_shows_a_confirmed_memory_on_one_line_that_says_it_was_confirmed(page, sam, conv):
    """E2: after a confirm (the same value again, superseding the old version), the reply's
    section names the memory once, as confirmed — never "a newer value had replaced it"."""
    planned_turn(conv, "t1", "My dog's name is Rex.")
    dog = MemoryRecord.objects.get(user=sam, key="dog.name")
    memory_confirm(record_id=dog.pk, user=sam)
    turn = planned_turn(conv, "t2", "What is my dog called?")
    assert ["memory", str(dog.pk), "superseded"] in turn.plan_snapshot["excluded"]
    words = words_of(
        used_section(page.get(f"/conversations/{conv.pk}/").content.decode(), reply_of(turn))
    )
    assert words.count("Dog's name") == 1
    assert "(you confirmed it)" in words
    assert LEFT_OUT_WORDS["superseded"] not in words and "Left out" not in words


def test_it_counts_withheld_messages_in_plain_words(page, sam, conv):
    """E2, F6: a stored plan whose `excluded` holds messages withheld because the user asked to
    forget something says so in words, apart from what did not fit; the first reply says it was
    given no earlier messages."""
    first = planned_turn(conv, "t1", "My cat is called Miso.")
    turn = planned_turn(conv, "t2", "What is my cat called?")
    snapshot = dict(turn.plan_snapshot)
    snapshot["excluded"] = [
        *snapshot["excluded"],
        ["message", str(first.user_message_id), "forgotten"],
        ["message", reply_of(first), "forgotten"],
    ]
    type(turn).objects.filter(pk=turn.pk).update(plan_snapshot=snapshot)
    html = page.get(f"/conversations/{conv.pk}/").content.decode()
    words = words_of(used_section(html, reply_of(turn)))
    assert (
        "2 earlier messages were withheld because you asked the companion to forget something "
        "they mention."
    ) in words
    assert "did not fit" not in words
    assert "It was given no earlier messages." in words_of(used_section(html, reply_of(first)))
    assert "0 earlier messages" not in html


def many_left_out_for_the_budget(sam, conv, n=30):
    """`n` supported user-scope memories and a turn whose plan has room for a few of them:
    the rest are left out for the budget. Answers the turn and how many were left out."""
    source = MessageFactory(conversation=conv, content="Some facts about me.")
    rows = user_facts(sam, n, value=lambda i: f"fact number {i}")
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=source) for r in rows])
    turn = turn_create(
        conversation_id=conv.pk,
        turn_key="t1",
        content="Hello.",
        plan=PlanParams(budget=300, memory_share=0.1),
    ).turn
    turn_commit_reply(turn_id=turn.pk, content="Hello to you.")
    turn.refresh_from_db()
    given = turn.plan_snapshot["memories"]
    left_out = sorted(str(r.pk) for r in rows if str(r.pk) not in given)
    assert 20 < len(left_out) < n
    return turn, left_out


def test_it_says_and_n_more_where_the_plan_listed_20_of_the_memories_left_out(page, sam, conv):
    """I9, E2: a plan lists 20 memories left out for the budget and counts them all; under
    the reply each of the 20 has its line and the rest one line, "…and N more", with the
    reason in words."""
    turn, left_out = many_left_out_for_the_budget(sam, conv)
    assert turn.plan_snapshot["excluded_counts"] == [["memory", "budget", len(left_out)]]
    assert len(turn.plan_snapshot["excluded"]) == 20
    words = words_of(
        used_section(page.get(f"/conversations/{conv.pk}/").content.decode(), reply_of(turn))
    )
    assert words.count(f": {LEFT_OUT_WORDS['budget']}") == 21
    assert f"…and {len(left_out) - 20} more: {LEFT_OUT_WORDS['budget']}" in words


def test_it_reads_a_plan_stored_before_the_counts_with_every_memory_left_out(page, sam, conv):
    """I9, E2: a plan stored before I9 listed every memory left out and kept no counts: each
    has its line with its reason, and nothing is said to be unlisted."""
    turn, left_out = many_left_out_for_the_budget(sam, conv)
    snapshot = dict(turn.plan_snapshot)
    del snapshot["excluded_counts"]
    snapshot["excluded"] = [["memory", i, "budget"] for i in left_out]
    type(turn).objects.filter(pk=turn.pk).update(plan_snapshot=snapshot)
    words = words_of(
        used_section(page.get(f"/conversations/{conv.pk}/").content.decode(), reply_of(turn))
    )
    assert words.count(f": {LEFT_OUT_WORDS['budget']}") == len(left_out)
    assert "more:" not in words
