"""The MCP tools (SPEC §15 M3), called as the server calls them: each a thin adapter over the
API's services, the access levels, one user's connection reaching nothing of another's, a
connection's writes held to `model-inferred` and to the user's forgets, I8's switches, and
every refusal a tool error with the problem's `code` and `detail`."""

import dataclasses

import pytest

from agents import credentials, tools
from agents.services import connection_create, connection_revoke
from conversations.scopes import Scope
from memory.forgetting import memory_forget
from memory.services import memory_assert, memory_correct, memory_settings_set
from policy.models import DecisionLog
from tests.agents.conftest import tool_caller
from tests.factories import CharacterFactory, ConversationFactory
from tests.helpers import live
from tests.policy.api.calls import decide

pytestmark = pytest.mark.django_db


@pytest.fixture
def facts(say):
    say("My dog's name is Rex. I work at Acme. My cat is called Miso.")


def _refused(answer, code):
    body, is_error = answer
    assert is_error, body
    assert body["code"] == code and body["detail"], body
    return body


def test_it_recalls_what_a_prompt_could_hold_most_relevant_first(connect, sam, facts):
    """M3 recall: the memories a prompt could hold now, ordered by I6 relevance to the query,
    each with id, label, value, certainty."""
    body, is_error = connect(sam)("recall", {"query": "where she works"})
    assert not is_error
    first = body["memories"][0]
    assert (first["key"], first["value"], first["certainty"]) == ("user.works_at", "Acme", "likely")
    assert set(first) == {"id", "key", "label", "value", "certainty"}
    assert {m["value"] for m in body["memories"]} == {"Rex", "Acme", "Miso"}
    limited, _ = connect(sam)("recall", {"query": "cat", "limit": 1})
    assert [m["value"] for m in limited["memories"]] == ["Miso"]


def test_it_never_recalls_a_forgotten_value(connect, sam, facts):
    """M3, F2: a forgotten value is never in any answer."""
    memory_forget(record_id=live("dog.name", sam).pk, user=sam)
    call = connect(sam)
    recalled, _ = call("recall", {})
    listed, _ = call("list_memories", {})
    assert "Rex" not in str(recalled) and "Rex" not in str(listed)


def test_it_lists_memories_as_the_api_does(connect, sam, facts):
    """M3 list_memories: the user's memories with their state, by key or state."""
    body, is_error = connect(sam)("list_memories", {"key": "cat.name"})
    assert not is_error and body["count"] == 1
    assert (body["memories"][0]["value"], body["memories"][0]["state"]) == ("Miso", "active")


def test_it_answers_a_question_and_a_decision(connect, sam, rowan, facts):
    """M3 ask (§8) and decide (§6, logged as an assistant's request)."""
    call = connect(sam)
    asked, _ = call("ask", {"question": "Where do I work?"})
    assert (asked["answer"], asked["understood"]) == ("Acme", True)
    decided, is_error = call("decide", {"capability": "tone.playful", "character": rowan.slug})
    assert not is_error and decided["effect"] == "ask"  # no rule: asked about (D2)
    assert decided["decision_id"]
    unknown = _refused(
        call("decide", {"capability": "no.such", "character": rowan.slug}), "validation_error"
    )
    assert "capability" in unknown["detail"].lower()


def test_it_logs_a_decision_with_the_connection_as_its_requester(api, sam, rowan):
    """M3 decide: the decision log names the connection (`connection:<id>`) as who asked,
    as an assistant's request (D10: an id, not the connection's name); a decision the runtime
    asks for names no connection."""
    created = connection_create(user=sam, name="Desk", access="read")
    body, is_error = tool_caller(created.connection)(
        "decide", {"capability": "tone.playful", "character": rowan.slug}
    )
    assert not is_error
    row = DecisionLog.objects.get(pk=body["decision_id"])
    assert (row.requester, row.requested_by) == (f"connection:{created.connection.pk}", "assistant")
    by_runtime = decide(
        api, {"user": "sam", "character": rowan.slug}, "tone.playful", requested_by="assistant"
    )
    assert DecisionLog.objects.get(pk=by_runtime.json()["decision_id"]).requester == ""


def test_it_answers_memory_off_to_reads_with_use_off(connect, sam, facts):
    """M3, I8: with `use` off, recall, list_memories and ask answer `memory_off`."""
    memory_settings_set(user=sam, changed_by="user", use=False)
    call = connect(sam)
    for name, args in (
        ("recall", {}),
        ("list_memories", {}),
        ("ask", {"question": "Where do I work?"}),
    ):
        _refused(call(name, args), "memory_off")


def test_it_remembers_a_text_as_model_inferred(connect, sam):
    """M3 remember: §8's extraction, stored with authority `model-inferred` whatever the text."""
    body, is_error = connect(sam, "write")("remember", {"text": "I work at Globex."})
    assert not is_error
    [found] = body["extracted"]
    assert (found["outcome"], found["memory"]["authority"]) == ("created", "model-inferred")


def test_it_answers_authority_conflict_when_a_text_meets_the_users_correction(connect, sam, facts):
    """M3, W6: `remember("Actually my cat is called Pixel")` after the user corrected the cat's
    name answers `authority_conflict`, and stores nothing."""
    memory_correct(record_id=live("cat.name", sam).pk, value="Mochi", user=sam)
    _refused(
        connect(sam, "write")("remember", {"text": "Actually my cat is called Pixel"}),
        "authority_conflict",
    )
    assert live("cat.name", sam).value == "Mochi"


def test_it_saves_with_model_inferred_authority(connect, sam):
    """M3 save: an assert, `model-inferred`."""
    body, _ = connect(sam, "write")("save", {"key": "pet.name", "value": "Pixel"})
    assert (body["outcome"], body["memory"]["authority"]) == ("created", "model-inferred")


def test_it_refuses_to_save_a_forgotten_value_whatever_its_time(connect, sam, facts):
    """M3, F3: a value a live tombstone covers is refused (`blocked`, `forgotten`), though its
    evidence is newer than the forget: only the user brings it back."""
    memory_forget(record_id=live("dog.name", sam).pk, user=sam)
    body, is_error = connect(sam, "write")("save", {"key": "dog.name", "value": "Rex"})
    assert not is_error
    assert (body["outcome"], body["reason"], body["memory"]) == ("blocked", "forgotten", None)
    assert live("dog.name", sam) is None


def test_it_stores_nothing_with_learn_off(connect, sam):
    """M3, I8: with `learn` off, writes store nothing (`blocked`, `paused`)."""
    memory_settings_set(user=sam, changed_by="user", learn=False)
    call = connect(sam, "write")
    saved, _ = call("save", {"key": "pet.name", "value": "Pixel"})
    remembered, _ = call("remember", {"text": "I work at Globex."})
    assert (saved["outcome"], saved["reason"]) == ("blocked", "paused")
    assert remembered == {"extracted": [], "learning": False}
    assert live("pet.name", sam) is None and live("user.works_at", sam) is None


def test_it_corrects_as_model_inferred_never_over_the_user(connect, sam, facts):
    """M3 correct: the same value is `unchanged` (never a confirm); a value the user corrected
    answers `authority_conflict`; an inferred one is replaced."""
    call = connect(sam, "write")
    cat = live("cat.name", sam)
    same, _ = call("correct", {"memory": str(cat.pk), "value": "Miso"})
    assert (same["outcome"], same["memory"]["authority"]) == ("unchanged", "rule-extracted")
    memory_correct(record_id=cat.pk, value="Mochi", user=sam)
    _refused(
        call("correct", {"memory": str(live("cat.name", sam).pk), "value": "Pixel"}),
        "authority_conflict",
    )
    saved, _ = call("save", {"key": "pet.name", "value": "Pixel"})
    replaced, _ = call("correct", {"memory": saved["memory"]["id"], "value": "Pico"})
    assert (replaced["outcome"], replaced["memory"]["value"]) == ("created", "Pico")


def test_it_forgets_with_forget_access(connect, sam, facts):
    """M3 forget: F1–F7, answering the tombstone with its counts, never the value."""
    body, is_error = connect(sam)("forget", {"memory": str(live("dog.name", sam).pk)})
    assert not is_error
    assert body["key"] == "dog.name" and "Rex" not in str(body)
    assert (body["withheld_messages"], body["withheld_memories"]) == (1, 0)
    assert live("dog.name", sam) is None


@pytest.mark.parametrize(
    "access, refused",
    [("read", {"remember", "save", "correct", "forget"}), ("write", {"forget"})],
)
def test_it_refuses_what_an_access_level_does_not_grant(connect, sam, facts, access, refused):
    """M1, M3: read; read and write; read, write and forget — each refusing the rest."""
    call = connect(sam, access)
    memory = str(live("cat.name", sam).pk)
    args = {
        "remember": {"text": "I work at Globex."},
        "save": {"key": "pet.name", "value": "Pixel"},
        "correct": {"memory": memory, "value": "Pixel"},
        "forget": {"memory": memory},
    }
    for name in refused:
        _refused(call(name, args[name]), "permission_denied")
    assert live("cat.name", sam).value == "Miso" and live("pet.name", sam) is None


def test_it_reaches_nothing_of_another_user(connect, sam, alex, alex_conv, rowan, facts, say):
    """M1: user A's connection fails on every one of user B's ids, as on an unknown id."""
    theirs = live("dog.name", sam)
    call = connect(alex)
    for name, args in (
        ("correct", {"memory": str(theirs.pk), "value": "Max"}),
        ("forget", {"memory": str(theirs.pk)}),
        ("recall", {"conversation": str(say("hi").conversation_id)}),
        (
            "decide",
            {
                "capability": "tone.playful",
                "character": rowan.slug,
                "conversation": str(say("x").conversation_id),
            },
        ),
    ):
        body = _refused(call(name, args), "not_found")
        assert "sam" not in body["detail"]
    listed, _ = call("list_memories", {})
    assert listed == {"count": 0, "memories": []}
    assert live("dog.name", sam).value == "Rex"


def test_it_keeps_a_connection_to_its_characters(connect, sam, rowan, conv):
    """M1: a connection for some characters sees the user scope and theirs only."""
    wren = CharacterFactory(slug="wren", name="Wren")
    owner = connect(sam, "write")
    theirs, _ = owner("save", {"key": "pet.name", "value": "Pixel", "character": "wren"})
    call = connect(sam, "forget", characters=[rowan.slug])
    _refused(call("recall", {"character": wren.slug}), "not_found")
    _refused(call("save", {"key": "x.y", "value": "z", "character": wren.slug}), "not_found")
    _refused(call("forget", {"memory": theirs["memory"]["id"]}), "not_found")
    wren_conv = ConversationFactory(user=sam, character=wren)
    for conversation, value in ((wren_conv, "Wren's"), (conv, "Rowan's")):
        memory_assert(
            user=sam,
            key="plan.next",
            value=value,
            scope=Scope("conversation", conversation=str(conversation.pk)),
        )
    _refused(call("recall", {"conversation": str(wren_conv.pk)}), "not_found")
    listed, _ = call("list_memories", {})
    assert [m["value"] for m in listed["memories"]] == ["Rowan's"]
    own, is_error = call("recall", {"character": rowan.slug, "conversation": str(conv.pk)})
    assert not is_error and "Wren's" not in str(own) and "Pixel" not in str(own)


def test_it_answers_a_failure_with_the_request_id_and_no_exception_text(connect, sam, monkeypatch):
    """M3: an unexpected failure answers `server_error` with the request id, no exception text."""

    def broken(call, args):
        raise RuntimeError("my secret is Miso")

    monkeypatch.setitem(tools.BY_NAME, "ask", dataclasses.replace(tools.BY_NAME["ask"], run=broken))
    body = _refused(connect(sam)("ask", {"question": "Where do I work?"}), "server_error")
    assert "Miso" not in body["detail"] and "RuntimeError" not in body["detail"]
    assert "request id" in body["detail"]


def test_it_checks_the_connection_again_inside_a_writes_transaction(sam):
    """M2: a write checks its connection again in its own transaction, so a revocation that
    committed after the request was authenticated wins: nothing is stored."""
    created = connection_create(user=sam, name="Desk", access="forget")
    authenticated = credentials.authenticate(created.token)
    connection_revoke(connection_id=created.connection.pk, user=sam)

    call = tool_caller(authenticated)
    _refused(call("save", {"key": "pet.name", "value": "Pixel"}), "unauthenticated")
    assert live("pet.name", sam) is None
    recalled, is_error = call("recall", {})  # a read holds no transaction of its own
    assert not is_error
