"""The boundaries page (issue 5; SPEC §6): decisions and why, the controls, revoking, and the
static check's conflicts."""

import pytest

from policy.models import DecisionLog, PolicyRule
from policy.services import rule_create
from tests.factories import CharacterFactory, ConversationFactory
from tests.pages.test_memory_pages import follow_messages, text

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


def test_showing_the_page_logs_no_decision(page, conv):
    page.get("/boundaries/")
    assert not DecisionLog.objects.exists()


def test_it_sets_never_with_a_character(page, sam, conv):
    r = page.post("/boundaries/set", {"capability": "media.image", "effect": "deny",
                                      "where": "character:captain-rowan"}, follow=True)

    assert r.redirect_chain == [("/boundaries/", 302)]
    rule = live_rules(sam).get()
    assert (rule.capability_id, rule.effect, rule.source, rule.scope_kind, rule.character.slug) == (
        "media.image", "deny", "explicit-user", "character", "captain-rowan")
    assert follow_messages(r) == ["Saved: Images — never, with Captain Rowan."]
    images = row(r, "With Captain Rowan", "media.image")
    assert (images.decision, images.why) == ("Not allowed", "You decided: never, with Captain Rowan.")
    assert row(r, "Everywhere", "media.image").effect == "ask"
    assert "Never, with Captain Rowan" in text(r)


def test_the_api_decision_follows_what_the_page_set(page, api, sam, conv):
    page.post("/boundaries/set", {"capability": "tone.playful", "effect": "allow", "where": "global"})
    body = {"context": {"user": "sam", "character": "captain-rowan", "conversation": str(conv.pk)},
            "capability": "tone.playful", "requested_by": "assistant"}
    decided = api.post("/api/v1/policy/decide", body, format="json").json()
    assert (decided["effect"], decided["reason"]) == ("allow", "explicit-rule")

    page.post("/boundaries/set", {"capability": "tone.playful", "effect": "deny", "where": f"conversation:{conv.pk}"})
    assert api.post("/api/v1/policy/decide", body, format="json").json()["effect"] == "deny"


def test_changing_a_choice_at_the_same_place_replaces_it(page, sam, conv):
    """Rules are immutable (§6): the old one is revoked and a successor made, so the two never
    tie (D4 would ask)."""
    page.post("/boundaries/set", {"capability": "media.voice", "effect": "allow", "where": "global"})
    r = page.post("/boundaries/set", {"capability": "media.voice", "effect": "ask", "where": "global"}, follow=True)

    [rule] = live_rules(sam)
    assert (rule.effect, rule.version, rule.supersedes.effect) == ("ask", 2, "allow")
    assert row(r, "Everywhere", "media.voice").why == "You decided: always ask first, everywhere."


def test_setting_the_same_choice_again_changes_nothing(page, sam, conv):
    page.post("/boundaries/set", {"capability": "media.voice", "effect": "allow", "where": "global"})
    r = page.post("/boundaries/set", {"capability": "media.voice", "effect": "allow", "where": "global"}, follow=True)
    assert PolicyRule.objects.filter(user=sam).count() == 1
    assert "already set" in follow_messages(r)[-1]


def test_it_sets_a_choice_for_one_conversation(page, sam, conv):
    page.post("/boundaries/set", {"capability": "topic.work", "effect": "deny", "where": f"conversation:{conv.pk}"})
    rule = live_rules(sam).get()
    assert (rule.scope_kind, rule.conversation_id) == ("conversation", conv.pk)
    assert "Never, only in “Rooftop greenhouse” with Captain Rowan" in text(page.get("/boundaries/"))


def test_it_explains_a_product_default(page, conv):
    rule_create(user=None, capability="media.voice", effect="deny", source="product-default", scope={"kind": "global"})
    r = page.get("/boundaries/")
    assert row(r, "With Captain Rowan", "media.voice").why == "Product default (everywhere)."


def test_it_shows_conflicts_found_by_the_static_check(page, sam, conv):
    for effect in ("allow", "deny"):
        rule_create(user=sam, capability="tone.playful", effect=effect, source="explicit-user", scope={"kind": "global"})

    r = page.get("/boundaries/")

    [conflict] = r.context["conflicts"]
    assert conflict["capability"] == "A playful tone"
    assert sorted(conflict["rules"]) == ["your choice: always allow, everywhere", "your choice: never, everywhere"]
    assert "disagree, so the companion will ask you each time" in text(r)
    assert row(r, "Everywhere", "tone.playful").why.startswith("Choices that rank the same disagree")


def test_it_revokes_a_choice(page, sam, conv):
    rule = rule_create(user=sam, capability="media.image", effect="deny", source="explicit-user",
                       scope={"kind": "character", "character": "captain-rowan"})

    r = page.post(f"/boundaries/rules/{rule.pk}/revoke", follow=True)

    rule.refresh_from_db()
    assert rule.revoked_at is not None
    assert "Removed your choice for Images" in follow_messages(r)[0]
    assert row(r, "With Captain Rowan", "media.image").effect == "ask"


@pytest.mark.parametrize(("field", "data"), [
    ("effect", {"capability": "media.image", "effect": "sometimes", "where": "global"}),
    ("capability", {"capability": "media.smell", "effect": "deny", "where": "global"}),
    ("where", {"capability": "media.image", "effect": "deny", "where": "galaxy"}),
    ("where", {"capability": "media.image", "effect": "deny", "where": "character:nobody"}),
    ("where", {"capability": "media.image", "effect": "deny", "where": "conversation:00000000-0000-0000-0000-000000000000"}),
    ("capability", {"effect": "deny", "where": "global"}),
])
def test_bad_input_rerenders_with_errors_and_stores_nothing(page, sam, conv, field, data):
    r = page.post("/boundaries/set", data)
    assert r.status_code == 200
    assert field in r.context["error_form"].errors
    assert "Nothing was saved" in text(r)
    assert not PolicyRule.objects.exists()


def test_another_users_conversation_is_not_a_place(page, alex, alex_conv, conv):
    r = page.post("/boundaries/set", {"capability": "media.image", "effect": "allow",
                                      "where": f"conversation:{alex_conv.pk}"})
    assert "where" in r.context["error_form"].errors
    assert not PolicyRule.objects.exists()


def test_another_users_rule_and_a_product_default_cannot_be_revoked(page, alex, conv):
    theirs = rule_create(user=alex, capability="media.image", effect="deny", source="explicit-user", scope={"kind": "global"})
    default = rule_create(user=None, capability="media.image", effect="deny", source="product-default", scope={"kind": "global"})
    for rule in (theirs, default):
        assert page.post(f"/boundaries/rules/{rule.pk}/revoke").status_code == 404
        rule.refresh_from_db()
        assert rule.revoked_at is None


def test_it_only_shows_the_users_characters_and_choices(page, alex, conv):
    mira = CharacterFactory(slug="mira", name="Mira")
    ConversationFactory(user=alex, character=mira)
    rule_create(user=alex, capability="media.image", effect="allow", source="explicit-user", scope={"kind": "global"})
    r = page.get("/boundaries/")
    assert "Mira" not in text(r)
    assert r.context["yours"] == []
