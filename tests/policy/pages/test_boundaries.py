"""The boundaries page (SPEC §6): decisions and why, the controls, revoking, and the
static check's conflicts."""

import pytest

from policy.models import DecisionLog, PolicyRule
from policy.services import rule_create
from tests.factories import CharacterFactory, ConversationFactory
from tests.helpers import follow_messages, text

pytestmark = pytest.mark.django_db


def section(response, title):
    return next(s for s in response.context["sections"] if s["title"] == title)


def row(response, title, capability):
    return next(r for r in section(response, title)["rows"] if r.name == capability)


def live_rules(user):
    return PolicyRule.objects.filter(user=user, revoked_at__isnull=True)


def test_it_shows_each_capability_with_its_decision_and_why(page, conv):
    r = page.get("/boundaries/")

    assert r.status_code == 200
    assert [s["title"] for s in r.context["sections"]] == ["Everywhere", "With Captain Rowan"]
    images = row(r, "With Captain Rowan", "media.image")
    assert (images.effect, images.decision) == ("ask", "Asks you first")
    assert images.why == "You have not chosen yet, so the companion asks you first."
    seen = text(r)
    assert "Images" in seen and "Voice messages" in seen and "A playful tone" in seen
    assert "You have not made any choices yet" in seen


def test_it_logs_no_decision_when_shown(page, conv):
    page.get("/boundaries/")
    assert not DecisionLog.objects.exists()


def test_it_sets_never_with_a_character(page, sam, conv):
    r = page.post(
        "/boundaries/set",
        {"capability": "media.image", "effect": "deny", "where": "character:captain-rowan"},
        follow=True,
    )

    assert r.redirect_chain == [("/boundaries/", 302)]
    rule = live_rules(sam).get()
    assert (rule.capability_id, rule.effect, rule.source, rule.scope_kind, rule.character.slug) == (
        "media.image",
        "deny",
        "explicit-user",
        "character",
        "captain-rowan",
    )
    assert follow_messages(r) == ["Saved: Images — never, with Captain Rowan."]
    images = row(r, "With Captain Rowan", "media.image")
    assert (images.decision, images.why) == (
        "Not allowed",
        "You decided: never, with Captain Rowan.",
    )
    assert row(r, "Everywhere", "media.image").effect == "ask"
    assert "Never, with Captain Rowan" in text(r)


def test_it_sets_choices_the_api_decision_then_follows(page, api, sam, conv):
    page.post(
        "/boundaries/set", {"capability": "tone.playful", "effect": "allow", "where": "global"}
    )
    body = {
        "context": {"user": "sam", "character": "captain-rowan", "conversation": str(conv.pk)},
        "capability": "tone.playful",
        "requested_by": "assistant",
    }
    decided = api.post("/api/v1/policy/decide", body, format="json").json()
    assert (decided["effect"], decided["reason"]) == ("allow", "explicit-rule")

    page.post(
        "/boundaries/set",
        {"capability": "tone.playful", "effect": "deny", "where": f"conversation:{conv.pk}"},
    )
    assert api.post("/api/v1/policy/decide", body, format="json").json()["effect"] == "deny"


def test_it_replaces_a_choice_changed_at_the_same_place(page, sam, conv):
    """Rules are immutable (§6): the old one is revoked and a successor made, so the two never
    tie (D4 would ask)."""
    page.post(
        "/boundaries/set", {"capability": "media.voice", "effect": "allow", "where": "global"}
    )
    r = page.post(
        "/boundaries/set",
        {"capability": "media.voice", "effect": "ask", "where": "global"},
        follow=True,
    )

    [rule] = live_rules(sam)
    assert (rule.effect, rule.version, rule.supersedes.effect) == ("ask", 2, "allow")
    assert row(r, "Everywhere", "media.voice").why == "You decided: always ask first, everywhere."


def test_it_changes_nothing_when_the_same_choice_is_set_again(page, sam, conv):
    page.post(
        "/boundaries/set", {"capability": "media.voice", "effect": "allow", "where": "global"}
    )
    r = page.post(
        "/boundaries/set",
        {"capability": "media.voice", "effect": "allow", "where": "global"},
        follow=True,
    )
    assert PolicyRule.objects.filter(user=sam).count() == 1
    assert "already set" in follow_messages(r)[-1]


def test_it_sets_a_choice_for_one_conversation(page, sam, conv):
    page.post(
        "/boundaries/set",
        {"capability": "topic.work", "effect": "deny", "where": f"conversation:{conv.pk}"},
    )
    rule = live_rules(sam).get()
    assert (rule.scope_kind, rule.conversation_id) == ("conversation", conv.pk)
    assert "Never, only in “Rooftop greenhouse” with Captain Rowan" in text(
        page.get("/boundaries/")
    )


def test_it_explains_a_product_default(page, conv):
    rule_create(
        user=None,
        capability="media.voice",
        effect="deny",
        source="product-default",
        scope={"kind": "global"},
    )
    r = page.get("/boundaries/")
    assert row(r, "With Captain Rowan", "media.voice").why == "Product default (everywhere)."


def test_it_shows_conflicts_found_by_the_static_check(page, sam, conv):
    for effect in ("allow", "deny"):
        rule_create(
            user=sam,
            capability="tone.playful",
            effect=effect,
            source="explicit-user",
            scope={"kind": "global"},
        )

    r = page.get("/boundaries/")

    [conflict] = r.context["conflicts"]
    assert conflict["capability"] == "A playful tone"
    assert sorted(conflict["rules"]) == [
        "your choice: always allow, everywhere",
        "your choice: never, everywhere",
    ]
    assert "disagree, so the companion will ask you each time" in text(r)
    assert row(r, "Everywhere", "tone.playful").why.startswith(
        "Choices that rank the same disagree"
    )


def test_it_revokes_a_choice(page, sam, conv):
    rule = rule_create(
        user=sam,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "character", "character": "captain-rowan"},
    )

    r = page.post(f"/boundaries/rules/{rule.pk}/revoke", follow=True)

    rule.refresh_from_db()
    assert rule.revoked_at is not None
    assert "Removed your choice for Images" in follow_messages(r)[0]
    assert row(r, "With Captain Rowan", "media.image").effect == "ask"


@pytest.mark.parametrize(
    ("field", "data"),
    [
        ("effect", {"capability": "media.image", "effect": "sometimes", "where": "global"}),
        ("capability", {"capability": "media.smell", "effect": "deny", "where": "global"}),
        ("where", {"capability": "media.image", "effect": "deny", "where": "galaxy"}),
        ("where", {"capability": "media.image", "effect": "deny", "where": "character:nobody"}),
        (
            "where",
            {
                "capability": "media.image",
                "effect": "deny",
                "where": "conversation:00000000-0000-0000-0000-000000000000",
            },
        ),
        ("capability", {"effect": "deny", "where": "global"}),
    ],
)
def test_it_rerenders_bad_input_with_errors_and_stores_nothing(page, sam, conv, field, data):
    r = page.post("/boundaries/set", data)
    assert r.status_code == 200
    assert field in r.context["error_form"].errors
    assert "Nothing was saved" in text(r)
    assert not PolicyRule.objects.exists()


def test_it_does_not_offer_another_users_conversation_as_a_place(page, alex, alex_conv, conv):
    r = page.post(
        "/boundaries/set",
        {"capability": "media.image", "effect": "allow", "where": f"conversation:{alex_conv.pk}"},
    )
    assert "where" in r.context["error_form"].errors
    assert not PolicyRule.objects.exists()


def test_it_revokes_neither_another_users_rule_nor_a_product_default(page, alex, conv):
    theirs = rule_create(
        user=alex,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    default = rule_create(
        user=None,
        capability="media.image",
        effect="deny",
        source="product-default",
        scope={"kind": "global"},
    )
    for rule in (theirs, default):
        assert page.post(f"/boundaries/rules/{rule.pk}/revoke").status_code == 404
        rule.refresh_from_db()
        assert rule.revoked_at is None


def test_it_only_shows_the_users_characters_and_choices(page, alex, conv):
    mira = CharacterFactory(slug="mira", name="Mira")
    ConversationFactory(user=alex, character=mira)
    rule_create(
        user=alex,
        capability="media.image",
        effect="allow",
        source="explicit-user",
        scope={"kind": "global"},
    )
    r = page.get("/boundaries/")
    assert "Mira" not in text(r)
    assert r.context["yours"] == []


# --- The page never contradicts a save ------------------------------------------------


def card(response, title, capability):
    return row(response, title, capability)


def places_of(row_):
    return [(a.where, a.effect, a.why) for a in row_.applies]


def test_it_shows_a_choice_for_one_conversation_on_the_characters_card(page, sam, conv):
    """Before, the card decided for the character alone, so "Never, only in this conversation"
    was saved and the card still said "Asks you first – You have not chosen yet" (D1, D3)."""
    r = page.post(
        "/boundaries/set",
        {
            "capability": "media.image",
            "effect": "deny",
            "section": "captain-rowan",
            "where": f"conversation:{conv.pk}",
        },
        follow=True,
    )

    assert follow_messages(r) == [
        "Saved: Images — never, only in “Rooftop greenhouse” with Captain Rowan."
    ]
    images = card(r, "With Captain Rowan", "media.image")
    assert places_of(images) == [
        (
            "Elsewhere with Captain Rowan",
            "ask",
            "No choice of yours covers the rest, so the companion asks you first.",
        ),
        (
            "In “Rooftop greenhouse”",
            "deny",
            "You decided: never, only in “Rooftop greenhouse” with Captain Rowan.",
        ),
    ]
    html = r.content.decode()
    assert (
        'In “Rooftop greenhouse”:</span> <span class="decision decision-deny">Not allowed</span>'
        in html
    )


def test_it_keeps_where_and_the_choice_on_the_card_as_chosen_after_saving(page, sam, conv):
    """SPEC §6: the place and the effect just saved stay selected on their card, which the
    redirect brings into view."""
    r = page.post(
        "/boundaries/set",
        {
            "capability": "media.image",
            "effect": "deny",
            "section": "captain-rowan",
            "where": f"conversation:{conv.pk}",
        },
    )
    assert r.status_code == 302
    assert r["Location"] == (
        f"/boundaries/?section=captain-rowan&capability=media.image&where=conversation%3A{conv.pk}"
        "#card-captain-rowan-media-image"
    )

    after = page.get(r["Location"])
    images = card(after, "With Captain Rowan", "media.image")
    assert (images.where, images.choice, images.open) == (f"conversation:{conv.pk}", "deny", True)
    html = after.content.decode()
    assert f'<option value="conversation:{conv.pk}" selected>' in html
    assert '<option value="deny" selected>Never</option>' in html
    assert 'id="card-captain-rowan-media-image"' in html
    # Only that card is open; every other card shows its own place and decision.
    assert [r.open for s in after.context["sections"] for r in s["rows"]].count(True) == 1
    assert card(after, "With Captain Rowan", "media.voice").where == "character:captain-rowan"


def test_it_shows_the_demos_own_conversation_choice_on_its_card(client, db):
    """The demo answers "playful tone? allow, for this conversation" (D8): its card says so."""
    from django.contrib.auth import get_user_model

    from turns.demo import build

    build(username="demo", password="demo password 1")
    client.force_login(get_user_model().objects.get(username="demo"))
    r = client.get("/boundaries/")
    playful = card(r, "With The Night Caretaker", "tone.playful")
    assert places_of(playful)[1] == (
        "In “The rooftop greenhouse”",
        "allow",
        "You decided: always allow, only in “The rooftop greenhouse” with The Night Caretaker, "
        "only when the companion asks.",
    )
    assert places_of(playful)[0][0] == "Elsewhere with The Night Caretaker"


def test_it_shows_each_place_on_a_card_as_the_runtime_is_told_there(page, api, sam, conv, rowan):
    """The page decides through the same engine as `POST /policy/decide` (D1–D4), per place."""
    other = ConversationFactory(user=sam, character=rowan, title="Second chat")
    rule_create(
        user=sam,
        capability="media.voice",
        effect="allow",
        source="explicit-user",
        scope={"kind": "character", "character": "captain-rowan"},
    )
    rule_create(
        user=sam,
        capability="media.voice",
        effect="deny",
        source="explicit-user",
        scope={"kind": "conversation", "conversation": str(conv.pk)},
    )
    rule_create(
        user=sam,
        capability="media.voice",
        effect="ask",
        source="explicit-user",
        scope={"kind": "scene", "conversation": str(other.pk), "scene": "greenhouse"},
    )
    voice = card(page.get("/boundaries/"), "With Captain Rowan", "media.voice")

    contexts = [
        {},
        {"conversation": str(other.pk), "scene": "greenhouse"},
        {"conversation": str(conv.pk)},
    ]
    assert [a.where for a in voice.applies] == [
        "Elsewhere with Captain Rowan",
        "In the “greenhouse” scene of “Second chat”",
        "In “Rooftop greenhouse”",
    ]
    for place, extra in zip(voice.applies, contexts, strict=True):
        body = {
            "context": {"user": "sam", "character": "captain-rowan", **extra},
            "capability": "media.voice",
            "requested_by": "assistant",
        }
        assert (
            api.post("/api/v1/policy/decide", body, format="json").json()["effect"] == place.effect
        )
    assert [a.effect for a in voice.applies] == ["allow", "ask", "deny"]


def test_it_puts_your_choices_first(page, sam, conv):
    """The user's own rules (SPEC §6, source explicit-user) are the first thing on the page."""
    rule_create(
        user=sam,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "global"},
    )
    html = page.get("/boundaries/").content.decode()
    assert (
        html.index('id="yours-title"')
        < html.index('id="section-everywhere"')
        < html.index('id="section-captain-rowan"')
    )


def test_it_reopens_a_refused_choices_card_with_the_errors_pointing_into_it(
    page, sam, conv, alex_conv
):
    """SPEC §0: another user's conversation is not a place; nothing is stored, and the error
    summary links to the field in the card the form came from."""
    r = page.post(
        "/boundaries/set",
        {
            "capability": "media.image",
            "effect": "deny",
            "section": "captain-rowan",
            "where": f"conversation:{alex_conv.pk}",
        },
    )
    assert r.status_code == 200
    images = card(r, "With Captain Rowan", "media.image")
    assert (images.open, images.choice) == (True, "deny")
    html = r.content.decode()
    assert (
        'href="#where-captain-rowan-media-image"' in html
        and 'id="where-captain-rowan-media-image"' in html
    )
    assert not PolicyRule.objects.exists()


@pytest.mark.parametrize(
    "query",
    [
        "?section=nobody&capability=media.image&where=global",
        "?section=captain-rowan&capability=media.smell&where=character:captain-rowan",
        "?section=captain-rowan&capability=media.image&where=conversation:not-a-uuid",
        "?section=captain-rowan&capability=media.image&where=galaxy",
    ],
)
def test_it_reads_the_card_to_reopen_from_the_address_without_ever_failing(page, conv, query):
    """Never a 500 for bad input: an address naming no card reopens none."""
    r = page.get("/boundaries/" + query)
    assert r.status_code == 200
    images = card(r, "With Captain Rowan", "media.image")
    assert images.where == "character:captain-rowan"


# ---------------------------------------------------------------------------------------------
# Boundaries wherever they apply: scenes, exceptions, a choice for the companion's asking (§6)


def test_it_makes_and_changes_a_choice_for_a_scene(page, sam, conv):
    """SPEC §6 (rule scope `scene`): a scene the user's turns were in is a place like the
    others — offered in "Where" on its character's cards right after its conversation, saved as
    a scene rule, shown on the card, and changed there (D11: the new choice replaces it)."""
    from turns.creation import turn_create

    turn_create(conversation_id=conv.pk, turn_key="t1", content="Hello.", scene="greenhouse")
    where = f"scene:{conv.pk}:greenhouse"
    r = page.get("/boundaries/")
    assert section(r, "With Captain Rowan")["places"] == [
        ("character:captain-rowan", "with Captain Rowan"),
        ("global", "everywhere"),
        (f"conversation:{conv.pk}", "only in “Rooftop greenhouse”"),
        (where, "only in the “greenhouse” scene of “Rooftop greenhouse”"),
    ]

    r = page.post(
        "/boundaries/set",
        {"capability": "media.image", "effect": "deny", "section": "captain-rowan", "where": where},
        follow=True,
    )
    rule = live_rules(sam).get()
    assert (rule.scope_kind, str(rule.conversation_id), rule.scene, rule.effect) == (
        "scene",
        str(conv.pk),
        "greenhouse",
        "deny",
    )
    assert follow_messages(r) == [
        "Saved: Images — never, only in the “greenhouse” scene of “Rooftop greenhouse” with "
        "Captain Rowan."
    ]
    images = card(r, "With Captain Rowan", "media.image")
    assert places_of(images)[1] == (
        "In the “greenhouse” scene of “Rooftop greenhouse”",
        "deny",
        "You decided: never, only in the “greenhouse” scene of “Rooftop greenhouse” with Captain "
        "Rowan.",
    )
    assert (images.where, images.choice) == (where, "deny")  # the card shows the scene's choice

    page.post(
        "/boundaries/set",
        {
            "capability": "media.image",
            "effect": "allow",
            "section": "captain-rowan",
            "where": where,
        },
    )
    rule = live_rules(sam).get()
    assert (rule.scope_kind, rule.scene, rule.effect) == ("scene", "greenhouse", "allow")


def test_it_does_not_offer_a_scene_of_another_users_conversation_as_a_place(page, alex_conv, conv):
    r = page.post(
        "/boundaries/set",
        {
            "capability": "media.image",
            "effect": "deny",
            "where": f"scene:{alex_conv.pk}:greenhouse",
        },
    )
    assert r.status_code == 200 and not PolicyRule.objects.filter(user__isnull=False).exists()


def test_it_names_the_exceptions_on_the_everywhere_card(page, sam, conv, rowan):
    """§6, D3: "Everywhere: Allowed" is not the whole truth when a narrower choice differs; the
    everywhere card names each place where it does not hold."""
    lamplighter = CharacterFactory(slug="lamplighter", name="The Lamplighter")
    ConversationFactory(user=sam, character=lamplighter, title="Rounds")
    rule_create(
        user=sam,
        capability="media.image",
        effect="allow",
        source="explicit-user",
        scope={"kind": "global"},
    )
    rule_create(
        user=sam,
        capability="media.image",
        effect="deny",
        source="explicit-user",
        scope={"kind": "character", "character": "lamplighter"},
    )
    rule_create(
        user=sam,
        capability="media.image",
        effect="ask",
        source="explicit-user",
        scope={"kind": "conversation", "conversation": str(conv.pk)},
    )
    r = page.get("/boundaries/")
    everywhere = card(r, "Everywhere", "media.image").applies[0]
    assert (everywhere.decision, everywhere.exceptions) == (
        "Allowed",
        "except in “Rooftop greenhouse”: asks you first and with The Lamplighter: never",
    )
    assert (
        'Allowed</span><span class="exceptions">, except in “Rooftop greenhouse”: asks you first '
        "and with The Lamplighter: never.</span>"
    ) in r.content.decode()
    assert card(r, "Everywhere", "media.voice").applies[0].exceptions == ""


def test_it_says_so_for_a_choice_that_holds_when_the_companion_asks(page, sam, conv):
    """§6 (`requested_by`): a choice that holds only when the companion asks says so where it
    decides, not only in its reason."""
    rule_create(
        user=sam,
        capability="tone.playful",
        effect="allow",
        source="explicit-user",
        scope={"kind": "character", "character": "captain-rowan"},
        requested_by="assistant",
    )
    r = page.get("/boundaries/")
    playful = card(r, "With Captain Rowan", "tone.playful")
    assert playful.applies[0].decision == "Allowed when the companion asks"
    assert card(r, "Everywhere", "tone.playful").applies[0].exceptions == (
        "except with Captain Rowan: allowed when the companion asks"
    )
