"""SPEC F6: forgotten words leave the prompt. Through the API, as the runtime meets it: a
forget withholds the purged records' source messages, every message of the covered
conversations that mentions a purged value as whole words, and replies to turns planned with
what it purged; later plans leave them out (`excluded` reason `forgotten`), undo releases
them, and what is said after the forget is never withheld."""

import pytest
from django.urls import reverse

from conversations.models import Message
from memory.models import MemoryRecord, Tombstone, Withholding
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db


def turn(api, conv, key, content, **extra):
    r = api.post(
        f"/api/v1/conversations/{conv.pk}/turns",
        {"turn_key": key, "content": content, **extra},
        format="json",
    )
    assert r.status_code == 201, r.content
    return r.json()


def reply(api, turn_id, content):
    r = api.post(f"/api/v1/turns/{turn_id}/reply", {"content": content}, format="json")
    assert r.status_code == 201, r.content
    return r.json()["message"]


def plan(api, turn_id, **params):
    params.setdefault("budget", 4000)
    r = api.get(f"/api/v1/turns/{turn_id}/prompt-plan", params)
    assert r.status_code == 200, r.content
    return r.json()


def history_ids(body) -> list[str]:
    return [m["id"] for m in body["history"]]


def forgotten_messages(body) -> set[str]:
    return {
        e["id"] for e in body["excluded"] if e["kind"] == "message" and e["reason"] == "forgotten"
    }


def forget(api, memory_id, **body):
    r = api.post(f"/api/v1/memories/{memory_id}/forget", body, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def active_id(sam, key) -> str:
    [record] = MemoryRecord.objects.filter(user=sam, key=key, status="active").exclude(
        superseded_by__isnull=False
    )
    return str(record.pk)


@pytest.fixture
def miso(api, sam, conv):
    """The issue's conversation: Miso, the companion's answer, the correction to Pixel."""
    t1 = turn(api, conv, "t1", "My cat is called Miso.")
    r1 = reply(api, t1["id"], "Miso is a lovely name for a cat!")
    t2 = turn(api, conv, "t2", "Actually my cat is called Pixel.")
    r2 = reply(api, t2["id"], "Pixel it is.")
    return {
        "said": [t1["user_message"]["id"], r1["id"], t2["user_message"]["id"]],
        "other_reply": r2["id"],
        "t2": t2,
    }


def test_it_withholds_every_message_that_held_the_forgotten_value(api, sam, conv, miso):
    """F6 parts 1 and 2: the sources of both purged values and the reply that mentions Miso;
    "Pixel it is." mentions Pixel, a purged value too. The answer counts them."""
    tombstone = forget(api, active_id(sam, "cat.name"))
    assert tombstone["withheld_messages"] == 4
    t3 = turn(api, conv, "t3", "How was your day?")
    body = plan(api, t3["id"])
    assert history_ids(body) == []
    assert forgotten_messages(body) == {*miso["said"], miso["other_reply"]}
    for text in ("Miso", "Pixel"):
        assert text not in str(body["history"])


def test_it_keeps_messages_that_do_not_mention_it(api, sam, conv, miso):
    """Only whole words count: "Misofan" is not "Miso"; the plan keeps the message."""
    t = turn(api, conv, "t-side", "I met a Misofan today.")
    reply(api, t["id"], "Sounds fun.")
    forget(api, active_id(sam, "cat.name"))
    t3 = turn(api, conv, "t3", "Anything else?")
    kept = [m["content"] for m in plan(api, t3["id"])["history"]]
    assert kept == ["I met a Misofan today.", "Sounds fun."]


def test_it_never_withholds_what_is_said_after_the_forget(api, sam, conv, miso):
    """F3/F6: the user may say it again; the later message is history again."""
    forget(api, active_id(sam, "cat.name"))
    again = turn(api, conv, "t3", "My cat is called Miso, by the way.")
    t4 = turn(api, conv, "t4", "And?")
    body = plan(api, t4["id"])
    assert history_ids(body) == [again["user_message"]["id"]]
    assert again["user_message"]["id"] not in forgotten_messages(body)


def test_it_brings_back_the_history_from_before_the_forget_on_undo(api, sam, conv, miso):
    """F4 + F6: deleting the tombstone releases its messages: the history and its exclusions
    are what they were before the forget (the erased values stay erased)."""
    t3 = turn(api, conv, "t3", "How was your day?")
    before = plan(api, t3["id"])
    tombstone = forget(api, active_id(sam, "cat.name"))
    assert history_ids(plan(api, t3["id"])) == []
    assert api.delete(f"/api/v1/tombstones/{tombstone['id']}").status_code == 204
    after = plan(api, t3["id"])
    assert history_ids(after) == history_ids(before) == [*miso["said"], miso["other_reply"]]
    assert forgotten_messages(after) == set()
    assert not MemoryRecord.objects.filter(user=sam, key="cat.name").exclude(value="").exists()


def test_it_keeps_on_undo_what_another_forget_still_withholds(api, sam, conv):
    """F4 + F6: a message two forgets withhold stays withheld until both are undone."""
    both = turn(api, conv, "t1", "My dog's name is Rex and I like jazz.")
    dog = forget(api, active_id(sam, "dog.name"))
    jazz = forget(api, active_id(sam, "user.likes"))
    assert dog["withheld_messages"] == jazz["withheld_messages"] == 1
    t2 = turn(api, conv, "t2", "Hello")
    assert api.delete(f"/api/v1/tombstones/{dog['id']}").status_code == 204
    assert forgotten_messages(plan(api, t2["id"])) == {both["user_message"]["id"]}
    assert api.delete(f"/api/v1/tombstones/{jazz['id']}").status_code == 204
    assert history_ids(plan(api, t2["id"])) == [both["user_message"]["id"]]


def test_it_withholds_a_conversation_forgets_words_in_that_conversation_only(api, sam, rowan, conv):
    """F6 scope mapping: `conversation` → that conversation; its record's sources wherever
    they are (part 1) — here none outside."""
    other = ConversationFactory(user=sam, character=rowan, title="Another evening")
    there = turn(api, other, "o1", "Pixel slept all day.")
    said = api.post(
        "/api/v1/memories",
        {
            "user": sam.username,
            "key": "cat.name",
            "value": "Pixel",
            "scope": {"kind": "conversation", "conversation": str(conv.pk)},
            "authority": "user-confirmed",
        },
        format="json",
    ).json()["memory"]
    here = turn(api, conv, "c1", "Pixel is asleep.")
    tombstone = forget(api, said["id"])
    assert tombstone["withheld_messages"] == 1
    assert Withholding.objects.filter(message_id=here["user_message"]["id"]).exists()
    assert not Withholding.objects.filter(message_id=there["user_message"]["id"]).exists()


def test_it_withholds_a_value_under_two_characters_by_provenance_only(api, sam, conv):
    """F6: "X" would match too much as a word; only its source message is withheld."""
    source = turn(api, conv, "t1", "Call me X.")
    other = turn(api, conv, "t2", "X marks the spot.")
    tombstone = forget(api, active_id(sam, "user.preferred_name"))
    assert tombstone["withheld_messages"] == 1
    body = plan(api, turn(api, conv, "t3", "Hello")["id"])
    assert forgotten_messages(body) == {source["user_message"]["id"]}
    assert history_ids(body) == [other["user_message"]["id"]]


def test_it_withholds_only_that_value_in_a_value_level_forget(api, sam, conv):
    """F6: a `many` key's value-level forget withholds what mentions that value alone."""
    jazz = turn(api, conv, "t1", "I like jazz.")
    rain = turn(api, conv, "t2", "I like rain.")
    record = MemoryRecord.objects.get(user=sam, key="user.likes", value="jazz")
    forget(api, record.pk)
    body = plan(api, turn(api, conv, "t3", "Hello")["id"])
    assert forgotten_messages(body) == {jazz["user_message"]["id"]}
    assert history_ids(body) == [rain["user_message"]["id"]]


def test_it_withholds_a_reply_to_a_turn_planned_before_the_forget(api, sam, conv):
    """F6 part 3: the turn's plan held the record; its reply arrives after the forget and is
    withheld whatever it says. A reply to a turn whose plan held nothing forgotten is not."""
    unrelated = turn(
        api,
        ConversationFactory(user=sam, character=conv.character),
        "u1",
        "Hello there",
        plan={"budget": 4000},
    )
    assert unrelated["plan"]["memories"] == []
    turn(api, conv, "t1", "My cat is called Miso.")
    planned = turn(api, conv, "t2", "What is my cat called?", plan={"budget": 4000})
    assert [m["value"] for m in planned["plan"]["memories"]] == ["Miso"]
    forget(api, active_id(sam, "cat.name"))
    held = reply(api, planned["id"], "Your cat is called that name you told me.")
    free = reply(api, unrelated["id"], "Hello!")
    later = plan(api, turn(api, conv, "t3", "Thanks")["id"])
    assert held["id"] in forgotten_messages(later)
    assert not Withholding.objects.filter(message_id=free["id"]).exists()
    messages = api.get(f"/api/v1/users/{sam.username}/export").json()["messages"]
    assert {m["id"]: m["withheld"] for m in messages}[held["id"]] is True


def test_it_counts_in_the_tombstone_list_what_each_forget_withholds(
    api, sam, conv, miso, django_assert_num_queries
):
    forget(api, active_id(sam, "cat.name"))
    with django_assert_num_queries(4):  # token, user, count, page
        body = api.get("/api/v1/tombstones", {"user": sam.username}).json()
    assert [t["withheld_messages"] for t in body["results"]] == [4]


def test_it_withholds_through_every_key_on_forget_everything(api, sam, conv, miso, client):
    """F6 on "forget everything" (the page): every key forgotten everywhere withholds."""
    client.force_login(sam)
    r = client.post(reverse("data:forget-everything"), follow=True)
    assert r.status_code == 200
    assert "no longer sees the 4 messages" in r.content.decode()
    assert Message.objects.filter(user=sam, withholdings__isnull=False).distinct().count() == 4
    assert Tombstone.objects.filter(user=sam).count() == 1


def test_it_exports_and_imports_the_links_so_plans_stay_the_same(api, sam, conv, miso):
    """F6's §9 change: each tombstone lists what it withholds, each message says whether it
    is withheld; export → delete → import gives the same plan and `plan_hash`."""
    forget(api, active_id(sam, "cat.name"))
    t3 = turn(api, conv, "t3", "How was your day?")
    before = plan(api, t3["id"])
    snapshot = api.get(f"/api/v1/users/{sam.username}/export").json()
    assert snapshot["format"] == "companion-memory/3"
    [tomb] = snapshot["tombstones"]
    assert tomb["withheld_memories"] == []  # F7.2: no other memory names Miso
    assert sorted(tomb["withheld_messages"]) == sorted([*miso["said"], miso["other_reply"]])
    assert {m["id"] for m in snapshot["messages"] if m["withheld"]} == set(
        tomb["withheld_messages"]
    )
    assert api.delete(f"/api/v1/users/{sam.username}").status_code == 204
    assert (
        api.post(f"/api/v1/users/{sam.username}/import", snapshot, format="json").status_code == 200
    )
    again = api.get(f"/api/v1/users/{sam.username}/export").json()
    assert {k: v for k, v in again.items() if k != "exported_at"} == {
        k: v for k, v in snapshot.items() if k != "exported_at"
    }
    after = plan(api, t3["id"])
    assert after["plan_hash"] == before["plan_hash"]
    assert forgotten_messages(after) == forgotten_messages(before)


def test_it_refuses_to_import_links_that_disagree(api, sam, conv, miso):
    forget(api, active_id(sam, "cat.name"))
    snapshot = api.get(f"/api/v1/users/{sam.username}/export").json()
    snapshot["messages"][0]["withheld"] = not snapshot["messages"][0]["withheld"]
    r = api.post(f"/api/v1/users/{sam.username}/import", snapshot, format="json")
    assert r.status_code == 400
    assert r.json()["errors"] == {
        "messages.0.withheld": ["Must say whether a tombstone of the snapshot withholds it."]
    }


def test_it_imports_a_snapshot_of_the_previous_format_with_no_links(api, sam, conv, miso):
    forget(api, active_id(sam, "cat.name"))
    snapshot = api.get(f"/api/v1/users/{sam.username}/export").json()
    snapshot["format"] = "companion-memory/1"
    for m in snapshot["messages"]:
        del m["withheld"]
    for t in snapshot["tombstones"]:
        del t["withheld_messages"], t["withheld_replies"], t["withheld_memories"]
    assert api.delete(f"/api/v1/users/{sam.username}").status_code == 204
    assert (
        api.post(f"/api/v1/users/{sam.username}/import", snapshot, format="json").status_code == 200
    )
    assert not Withholding.objects.exists()


def test_it_marks_what_a_forget_withholds_in_message_reads(api, sam, conv, miso):
    """F6 + C4: `GET /conversations/{id}/messages` marks every message `withheld: true|false`,
    a turn's reply too; a withheld one comes back without its words (F7.5)."""
    t3 = turn(api, conv, "t3", "The rain kept me inside.")
    forget(api, active_id(sam, "cat.name"))
    rows = api.get(f"/api/v1/conversations/{conv.pk}/messages").json()["results"]
    assert {m["id"] for m in rows if m["withheld"]} == {*miso["said"], miso["other_reply"]}
    assert {m["content"] for m in rows if m["withheld"]} == {None}
    assert [m["withheld"] for m in rows if m["id"] == t3["user_message"]["id"]] == [False]
    read = api.get(f"/api/v1/turns/{miso['t2']['id']}").json()
    assert (read["reply"]["withheld"], read["reply"]["content"]) == (True, None)
    assert (
        api.get(f"/api/v1/tombstones/{Tombstone.objects.get(user=sam).pk}").json()[
            "withheld_messages"
        ]
        == 4
    )
