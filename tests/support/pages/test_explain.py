"""The explain view shows what the resolver and the policy engine decide for a
context — counts, record and rule ids, steps, reasons and details — and writes nothing."""

import pytest

from policy.models import DecisionLog
from tests.factories import UserFactory
from tests.support.conftest import staff_client

pytestmark = pytest.mark.django_db
URL = "/admin/support/explain/"


def explain(client, **params):
    response = client.get(URL, params)
    assert response.status_code == 200
    return response


def test_it_shows_the_resolvers_result_for_a_context(world, support):
    context = {"user": "sam", "conversation": str(world.conversation.pk), "scene": "greenhouse"}
    response = explain(support, **context)
    result = response.context["result"]
    by_id = {str(item.record.id): item for item in result.records}
    assert by_id[str(world.plant.pk)].step == "active"
    assert (
        by_id[str(world.plant.pk)].prompt == "likely"
    )  # rule-extracted with a source, confidence 1.0
    assert (by_id[str(world.retracted.pk)].step, by_id[str(world.retracted.pk)].reason) == (
        "R3",
        "expired",
    )
    assert (by_id[str(world.forgotten.pk)].step, by_id[str(world.forgotten.pk)].reason) == (
        "R2",
        "forgotten",
    )
    assert result.trace["candidates"] == len(result.records)
    html = response.content.decode()
    for record_id in by_id:
        assert record_id in html
    assert "superseded" in html and "forgotten" in html and "expired" in html


def test_it_shows_the_policy_engines_result_per_capability(world, support):
    response = explain(
        support,
        user="sam",
        conversation=str(world.conversation.pk),
        capabilities=["tone.playful", "media.image"],
    )
    by_cap = {c.capability: c for c in response.context["result"].capabilities}
    assert set(by_cap) == {"tone.playful", "media.image"}
    playful = by_cap["tone.playful"]
    assert (playful.effect, playful.reason, playful.rule_ids) == (
        "allow",
        "explicit-rule",
        (str(world.rule.pk),),
    )
    assert [(r["id"], r["reason"]) for r in playful.rules] == [(str(world.rule.pk), "decided")]
    image = by_cap["media.image"]
    assert (image.effect, image.reason) == ("deny", "explicit-rule")
    html = response.content.decode()
    assert str(world.rule.pk) in html and str(world.default_rule.pk) in html


def test_it_explains_a_rule_outside_the_context_without_applying_it(world, support):
    response = explain(support, user="sam", capabilities=["tone.playful"])  # no conversation
    [playful] = response.context["result"].capabilities
    assert (playful.effect, playful.reason) == ("ask", "no-applicable-rule")
    assert [r["reason"] for r in playful.rules] == ["scope"]


def test_it_honours_the_time(world, support):
    response = explain(support, user="sam", now="2000-01-01T00:00:00Z")
    result = response.context["result"]
    assert result.trace["active"] == 0
    assert {item.reason for item in result.records} <= {"not-yet-valid", "forgotten", "scope"}


def test_it_writes_no_decision_log_rows(world, support):
    before = DecisionLog.objects.count()
    explain(support, user="sam", conversation=str(world.conversation.pk))
    assert DecisionLog.objects.count() == before


def test_it_reports_a_context_that_does_not_load(world, support):
    response = explain(support, user="nobody")
    assert response.context["result"] is None
    assert response.context["form"].errors["user"]
    other = UserFactory(username="other")
    response = explain(support, user=other.username, conversation=str(world.conversation.pk))
    assert response.context["form"].errors["conversation"]  # sam's conversation, not other's


def test_it_needs_the_explain_permission(world):
    staff = UserFactory(username="staff-only", is_staff=True)
    assert staff_client(staff).get(URL, {"user": "sam"}).status_code == 403
    assert (
        staff_client(UserFactory(username="not-staff")).get(URL).status_code == 302
    )  # to the admin login


def test_it_resubmits_a_time_shown_back_on_its_form_as_the_same_instant_r3():
    """R3 at the record's own `valid_from`: the form shows its time with microseconds, so
    explaining again from the page compares the same instant (active), never a time cut to
    the second before it (which would read "not valid yet")."""
    import re
    from datetime import UTC, datetime

    from support.forms import ExplainForm

    moment = datetime(2026, 12, 1, 19, 21, 58, 588900, tzinfo=UTC)
    shown = ExplainForm(initial={"now": moment})["now"].as_widget()
    value = re.search(r'value="([^"]+)"', shown).group(1)
    again = ExplainForm({"user": "x", "now": value, "requested_by": "assistant"})
    again.fields["character"].choices = [("", "-")]
    again.fields["requested_by"].choices = [("assistant", "assistant")]
    again.is_valid()
    assert again.cleaned_data["now"] == moment
