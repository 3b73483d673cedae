"""SPEC §11: the continuity check is part of the suite."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from turns.continuity import CATEGORIES, play

pytestmark = pytest.mark.django_db


def test_it_passes_every_check_in_every_category():
    card, _ = play()
    failed = [c for c in card.checks if not c.passed]
    assert not failed, failed
    assert {c.category for c in card.checks} == set(CATEGORIES)


def test_it_prints_a_scorecard_and_leaves_no_user_behind(capsys):
    call_command("continuity_check")
    out = capsys.readouterr().out
    assert "total" in out and "passed" in out and "FAIL" not in out
    assert not get_user_model().objects.filter(username__startswith="continuity-").exists()


def test_it_fails_loudly_when_a_check_fails(monkeypatch):
    """The scorecard can fail: a broken correction path must make the command exit non-zero."""
    from django.core.management.base import CommandError

    from conversations.scopes import Scope
    from memory import learning
    from memory.write_rules import Fact

    def no_corrections(item, batch, *, known, sources, source_time, **_):
        # A correction taken as a model's guess: it supersedes nothing (§8 broken).
        return batch.add(
            Fact(
                key=item.key,
                value=item.value,
                scope=Scope("user"),
                authority="model-inferred",
                many=item.key in known.many_keys,
                sources=tuple(sources),
                source_time=source_time,
            )
        )

    monkeypatch.setattr(learning, "_correct", no_corrections)
    with pytest.raises(CommandError):
        call_command("continuity_check")


def test_it_fails_the_relevance_scene_when_plans_ignore_relevance(monkeypatch):
    """§11/I6: the relevance scene can fail: when the planner ignores relevance (the I3
    order, every score zero), the tight plan leaves the letter out and the command exits
    non-zero."""
    from django.core.management.base import CommandError

    import turns.planner as planner

    monkeypatch.setattr(
        planner,
        "relevance_order",
        lambda memories, query, pinned, label_terms=None: (
            list(range(len(memories))),
            [0.0] * len(memories),
        ),
    )
    card, _ = play()
    failed = {c.name for c in card.checks if not c.passed}
    assert failed == {
        "asked about the unsent letter on a tight budget, the plan brings the letter (I6)",
        "the relevance plan keeps the letter uncertain and unsent (I6, P2)",
    }
    with pytest.raises(CommandError):
        call_command("continuity_check")
