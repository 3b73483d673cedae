"""Support can answer "why did the companion say X?".

From a message, a turn or a memory in the admin, one click opens the explain view pre-filled
with that turn's conversation, scene and plan time; a turn's stored plan (SPEC §7) reads back
as tables of keys and labels, values only inside a reveal of the turn's user (SPEC §13 S1, the
page logged once); and
every reason is said in words, naming who acted ("retracted by the user on …"), not as a code.
"""

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlparse

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Turn
from conversations.scopes import Scope
from conversations.services import conversation_create
from memory.models import MemoryRecord, MemorySource
from memory.services import memory_assert, memory_retract
from policy.services import rule_create, rule_revoke
from support.models import PrivateTextAccess
from support.services import support_forget, support_retract
from support.services.turn_plan import NotListed
from tests.factories import MessageFactory, user_facts
from tests.support.conftest import VALUE, assert_no_private_text, open_reveal, staff_client
from turns.creation import turn_create
from turns.plans import turn_prompt_plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def planned(world):
    """sam's turn, with a plan that asked about the playful tone (its snapshot keeps ids only)."""
    turn_prompt_plan(turn_id=world.turn.pk, budget=4000, capabilities=("tone.playful",))
    return Turn.objects.get(pk=world.turn.pk)


def query(url: str) -> dict:
    return {k: v for k, v in parse_qs(urlparse(url).query).items()}


# --- one click from a turn, a message, a memory ---------------------------------------------------


def test_it_opens_explain_from_a_turn_for_its_conversation_scene_and_plan_time(
    planned, world, support
):
    response = support.get(f"/admin/support/explain/turn/{planned.pk}/")
    assert response.status_code == 302
    params = query(response["Location"])
    assert params == {
        "user": ["sam"],
        "conversation": [str(world.conversation.pk)],
        "scene": ["greenhouse"],
        "now": [
            datetime.fromisoformat(planned.plan_snapshot["now"])
            .astimezone(UTC)
            .isoformat()
            .replace("+00:00", "Z")
        ],
        "turn": [str(planned.pk)],
        "capabilities": ["tone.playful"],
    }
    page = support.get(response["Location"])
    assert page.status_code == 200
    form = page.context["form"]
    assert form.is_valid(), form.errors
    assert (str(form.cleaned_data["conversation"]), form.cleaned_data["scene"]) == (
        str(world.conversation.pk),
        "greenhouse",
    )
    assert form.cleaned_data["now"] == datetime.fromisoformat(planned.plan_snapshot["now"])
    assert page.context["plan"].turn.pk == planned.pk


def test_it_explains_a_turn_without_a_plan_at_the_time_it_was_made(world, support):
    response = support.get(f"/admin/support/explain/turn/{world.turn.pk}/")
    now = query(response["Location"])["now"][0]
    assert datetime.fromisoformat(now) == world.turn.created_at


def test_it_needs_the_explain_permission_and_a_real_turn_for_the_turn_link(world, viewer, support):
    from tests.factories import UserFactory

    staff = UserFactory(username="staff-only", is_staff=True)
    assert (
        staff_client(staff).get(f"/admin/support/explain/turn/{world.turn.pk}/").status_code == 403
    )
    assert (
        support.get("/admin/support/explain/turn/00000000-0000-0000-0000-000000000000/").status_code
        == 404
    )


def test_it_links_turns_messages_and_memories_to_explain(planned, world, support):
    turn_link = f'href="/admin/support/explain/turn/{planned.pk}/"'
    assert turn_link in support.get("/admin/conversations/turn/").content.decode()
    assert (
        turn_link in support.get(f"/admin/conversations/turn/{planned.pk}/change/").content.decode()
    )
    # The user's message and the companion's reply both lead to the turn they belong to.
    assert support.get("/admin/conversations/message/").content.decode().count(turn_link) == 2
    for message_id in (planned.user_message_id, world.reply.pk):
        assert (
            turn_link
            in support.get(f"/admin/conversations/message/{message_id}/change/").content.decode()
        )
    # A memory: its key in its scope now (list and page), and the turn that taught it (page).
    listing = support.get("/admin/memory/memoryrecord/").content.decode()
    assert 'class="explain-memory"' in listing and "/admin/support/explain/?user=sam" in listing
    page = support.get(f"/admin/memory/memoryrecord/{world.plant.pk}/change/").content.decode()
    assert turn_link in page and "Explain turn t1 that taught it" in page


# --- the plan snapshot as tables -------------------------------------------------------------


def test_it_shows_a_turns_plan_as_keys_and_labels_with_values_hidden(
    planned, world, support, support_user
):
    response = support.get(f"/admin/conversations/turn/{planned.pk}/change/")
    html = response.content.decode()
    plan = response.context["plan"]
    assert [m.id for m in plan.memories] == planned.plan_snapshot["memories"]
    plant = next(m for m in plan.memories if m.id == str(world.plant.pk))
    assert (plant.key, plant.label, plant.value) == ("basil_plant.name", "Basil plant's name", None)
    assert f'<tr data-record="{world.plant.pk}">' in html and "Basil plant&#x27;s name" in html
    assert "private-masked" in html
    assert [d["capability"] for d in plan.decisions] == ["tone.playful"]
    assert "plan_snapshot" not in html and '"excluded"' not in html  # no raw JSON of ids
    assert_no_private_text(html, "turn page")
    assert not PrivateTextAccess.objects.filter(staff_id=support_user.pk).exists()


def test_it_shows_a_turns_plan_values_only_inside_a_reveal_and_logs_the_page_once(
    planned, world, privileged, privileged_user
):
    url = f"/admin/conversations/turn/{planned.pk}/change/"
    html = privileged.get(url).content.decode()
    assert_no_private_text(html, "turn page without a reveal")
    assert "/admin/support/reveal/?user=sam" in html  # the masked values offer one
    grant = open_reveal(privileged_user, "sam")
    html = privileged.get(url).content.decode()
    assert VALUE in html
    [row] = PrivateTextAccess.objects.filter(staff_id=privileged_user.pk, event="page")
    assert (row.view, row.content_type.model, row.object_id, row.grant_id) == (
        "change",
        "turn",
        str(planned.pk),
        grant.pk,
    )
    revealed = MemoryRecord.objects.filter(pk__in=planned.plan_snapshot["memories"]).exclude(
        value=""
    )
    assert row.shown == revealed.count() > 0


def test_it_says_what_the_plan_left_out_in_words(world, support):
    """A record retracted before the plan is left out as `expired`: the table says so in words."""
    turn = turn_create(
        conversation_id=world.conversation.pk,
        turn_key="t2",
        content="hello again",
        scene="greenhouse",
    ).turn
    turn_prompt_plan(turn_id=turn.pk, budget=4000)
    plan = support.get(f"/admin/conversations/turn/{turn.pk}/change/").context["plan"]
    left_out = {item.id: item for item in plan.left_out}
    forgotten = left_out[str(world.forgotten.pk)]
    assert (forgotten.reason, forgotten.words) == ("forgotten", "forgotten by then")


def long_plan(world):
    """sam's turn in a new conversation after 30 messages that do not fit its budget, with 30
    more memories than fit: the plan lists 20 of each and counts them all (I9). Answers the
    turn, the messages left out (oldest first) and the memories made."""
    conversation = conversation_create(user=world.sam, character=world.rowan, title="Long")
    earlier = [MessageFactory(conversation=conversation, content="x" * 2000) for _ in range(30)]
    facts = user_facts(world.sam, 30, value=lambda i: f"fact number {i}")
    MemorySource.objects.bulk_create([MemorySource(memory=r, message=earlier[0]) for r in facts])
    turn = turn_create(conversation_id=conversation.pk, turn_key="long", content="hi").turn
    turn_prompt_plan(turn_id=turn.pk, budget=400, memory_share=0.1)
    turn.refresh_from_db()
    return turn, earlier, facts


def test_it_lists_what_a_bounded_plan_left_out_and_says_and_n_more_with_the_reason(world, support):
    """I9: the turn page lists the 20 memories and the 20 messages the plan listed (the
    messages newest first) and says "and N more" for the rest, with the reason in words; the
    heading counts everything left out."""
    turn, earlier, _ = long_plan(world)
    counts = {(kind, reason): n for kind, reason, n in turn.plan_snapshot["excluded_counts"]}
    memories_left_out = counts["memory", "budget"]
    assert memories_left_out > 20 and counts["message", "budget"] == 30
    response = support.get(f"/admin/conversations/turn/{turn.pk}/change/")
    plan = response.context["plan"]
    messages = [item for item in plan.left_out if item.kind == "message"]
    assert [item.id for item in messages] == [str(m.pk) for m in earlier[::-1][:20]]
    assert [item.seq for item in messages] == list(range(30, 10, -1))
    assert len([i for i in plan.left_out if (i.kind, i.reason) == ("memory", "budget")]) == 20
    assert plan.not_listed == [
        NotListed("memory", "budget", memories_left_out - 20, "did not fit the budget"),
        NotListed("message", "budget", 10, "did not fit the budget"),
    ]
    assert plan.left_out_total == sum(counts.values())
    html = response.content.decode()
    assert f"Left out ({sum(counts.values())})" in html
    assert "… and 10 more messages, not listed" in html
    assert f"… and {memories_left_out - 20} more memories, not listed" in html
    assert html.count('class="not-listed"') == 2


def test_it_lists_every_entry_of_a_plan_stored_before_the_counts(world, support):
    """I9: a plan stored before I9 listed every entry left out and kept no counts: the turn
    page lists each one with its reason and says nothing is unlisted."""
    turn, earlier, facts = long_plan(world)
    snapshot = dict(turn.plan_snapshot)
    del snapshot["excluded_counts"]
    given = set(snapshot["memories"])
    snapshot["excluded"] = sorted(
        [["message", str(m.pk), "budget"] for m in earlier]
        + [["memory", str(r.pk), "budget"] for r in facts if str(r.pk) not in given]
    )  # the world's other memories left out are not named: a list as stored is all there is
    Turn.objects.filter(pk=turn.pk).update(plan_snapshot=snapshot)
    response = support.get(f"/admin/conversations/turn/{turn.pk}/change/")
    plan = response.context["plan"]
    assert len(plan.left_out) == len(snapshot["excluded"]) > 40
    assert all(item.words == "did not fit the budget" for item in plan.left_out)
    assert plan.not_listed == [] and plan.left_out_total == len(snapshot["excluded"])
    html = response.content.decode()
    assert f"Left out ({len(snapshot['excluded'])})" in html and "not-listed" not in html


def test_it_shows_the_bound_on_the_explain_page_for_a_turn(world, support):
    """I9: the explain page, asked about a turn, shows its stored plan the same way: 20 of
    each listed and "and N more" with the reason."""
    turn, _, _ = long_plan(world)
    response = support.get(
        "/admin/support/explain/",
        {"user": "sam", "conversation": str(turn.conversation_id), "turn": str(turn.pk)},
    )
    assert response.status_code == 200
    plan = response.context["plan"]
    assert len([i for i in plan.left_out if i.reason == "budget"]) == 40
    assert [m.kind for m in plan.not_listed] == ["memory", "message"]
    assert "… and 10 more messages, not listed" in response.content.decode()


def test_it_costs_the_turn_page_the_same_for_a_small_or_a_large_plan(
    world, privileged, django_assert_num_queries
):
    def turn_with(n, key):
        for i in range(n):
            memory_assert(
                user=world.sam,
                key=f"{key}.k{i}",
                value=f"v{i}",
                scope=Scope("user"),
                authority="user-confirmed",
            )
        turn = turn_create(conversation_id=world.conversation.pk, turn_key=key, content="hi").turn
        turn_prompt_plan(
            turn_id=turn.pk, budget=100_000, capabilities=("tone.playful", "media.voice")
        )
        return f"/admin/conversations/turn/{turn.pk}/change/"

    small, large = turn_with(2, "small"), turn_with(40, "large")
    privileged.get(small)
    with CaptureQueriesContext(connection) as captured:
        assert privileged.get(small).status_code == 200
    expected = len(captured.captured_queries)  # read now: the next request resets the log
    privileged.get(large)
    with django_assert_num_queries(expected):
        assert privileged.get(large).status_code == 200


def test_it_shows_the_plan_when_explaining_with_a_turn_and_logs_the_page_once(
    planned, world, privileged, privileged_user
):
    open_reveal(privileged_user, "sam")
    url = privileged.get(f"/admin/support/explain/turn/{planned.pk}/")["Location"]
    html = privileged.get(url).content.decode()
    assert 'id="explain-plan"' in html and 'id="plan-memories"' in html and VALUE in html
    [row] = PrivateTextAccess.objects.filter(staff_id=privileged_user.pk, event="page")
    assert row.view == "explain" and row.shown >= 1


def test_it_refuses_to_explain_with_a_turn_of_another_user(world, support):
    from tests.factories import ConversationFactory, UserFactory

    other = UserFactory(username="other")
    conversation = ConversationFactory(user=other, character=world.rowan)
    theirs = turn_create(conversation_id=conversation.pk, turn_key="x", content="hi").turn
    response = support.get("/admin/support/explain/", {"user": "sam", "turn": str(theirs.pk)})
    assert response.context["form"].errors["turn"] == ["Not a turn of this user."]
    assert response.context["plan"] is None


# --- reasons in words ----------------------------------------------------------------------------


def explained(client, **params):
    result = client.get("/admin/support/explain/", {"user": "sam", **params}).context["result"]
    return {str(item.record.id): item for item in result.records}, result


def test_it_explains_a_retraction_as_the_users_with_its_time(world, support):
    items, _ = explained(support)
    item = items[str(world.retracted.pk)]
    assert (item.step, item.reason) == ("R3", "expired")
    assert (
        item.words
        == f"Retracted by the user on {when(world.retracted.retracted_at)}: marked no longer true."
    )


def test_it_says_so_for_a_retraction_by_support(world, support, support_user):
    record = memory_assert(
        user=world.sam, key="fish.name", value="Nemo", scope=Scope("user")
    ).record
    support_retract(staff=support_user, record_ids=[record.id], reason="Ticket 1: the user asked")
    items, _ = explained(support)
    retracted_at = MemoryRecord.objects.get(pk=record.id).retracted_at
    assert items[record.id].words == (
        f"Retracted by support, on the user's behalf, on {when(retracted_at)}: marked no longer "
        "true."
    )


def test_it_explains_a_forget_and_a_replacement_in_words(world, support, support_user):
    items, _ = explained(support, conversation=str(world.conversation.pk))
    forgotten = items[str(world.forgotten.pk)]
    assert forgotten.words.startswith("Forgotten by the user on ") and forgotten.words.endswith(
        "; its value is erased."
    )
    replaced = next(
        i for i in items.values() if i.record.key == "user.lives_in" and i.reason == "superseded"
    )
    assert replaced.words.startswith("Replaced on ") and replaced.words.endswith(
        "by a correction by the user."
    )

    support_forget(
        staff=support_user, record_ids=[world.plant.pk], reason="Ticket 2: forget the plant"
    )
    items, _ = explained(support, conversation=str(world.conversation.pk))
    assert items[str(world.plant.pk)].words.startswith(
        "Forgotten by support, on the user's behalf, on "
    )


def test_it_names_the_forget_that_blocks_an_older_value(world, support):
    from memory.forgetting import forget_key

    record = memory_assert(
        user=world.sam, key="bird.name", value="Tweety", scope=Scope("user")
    ).record
    tombstone = forget_key(user=world.sam, key="bird.name", scope_id="*")
    items, _ = explained(support)
    item = items[record.id]
    assert item.reason == "forgotten"
    assert item.words in {
        "Blocked by a forget: the user forgot this key everywhere on "
        f"{when(tombstone.forgotten_at)}, so older "
        "messages cannot bring it back.",
        f"Forgotten by the user on {when(MemoryRecord.objects.get(pk=record.id).status_since)}; "
        "its value is erased.",
    }


def test_it_explains_rules_in_words(world, support):
    revoked = rule_create(
        user=world.sam,
        capability="tone.playful",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    revoked = rule_revoke(rule_id=revoked.pk, owner=world.sam)
    _, result = explained(
        support, conversation=str(world.conversation.pk), capabilities=["tone.playful"]
    )
    [playful] = result.capabilities
    words = {rule["id"]: rule["words"] for rule in playful.rules}
    assert words[str(world.rule.pk)] == "Decides: allowed."
    assert words[str(revoked.pk)] == f"Revoked by the user on {when(revoked.revoked_at)}."
    assert playful.words == "one rule decides"


def test_it_shows_the_words_and_keeps_the_codes_small(world, support):
    html = support.get("/admin/support/explain/", {"user": "sam"}).content.decode()
    assert "Retracted by the user on " in html
    assert '<span class="reason-code"' in html


def when(moment):
    from support.words import when as words_when

    return words_when(moment)


def test_it_retracts_through_the_service_the_words_describe(world):
    """Guard for the words above: `memory_retract` closes the slot at the retraction time."""
    record = memory_assert(user=world.sam, key="horse.name", value="Ed", scope=Scope("user")).record
    result = memory_retract(record_id=record.id)
    stored = MemoryRecord.objects.get(pk=record.id)
    assert stored.retracted_at == stored.valid_until == result.retracted_at
