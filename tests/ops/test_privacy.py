"""Privacy (SPEC §12, D10, F1): a full scenario with the project's loggers at DEBUG
leaves no memory value or message text in any log record; the decision log and tombstones
have no free-text fields."""

import logging

import pytest
from django.db import models

from conversations.models import Message
from memory.models import MemoryRecord, SlotRetraction, Tombstone
from policy.models import DecisionLog
from tests.helpers import Collect

pytestmark = pytest.mark.django_db


def test_it_logs_no_private_text_in_a_full_scenario(api):
    from turns.continuity import play

    handler = Collect()
    root = logging.getLogger()
    old_levels = {
        name: logging.getLogger(name).level for name in ("", "companion", "django", "axes")
    }
    root.addHandler(handler)
    for name in ("", "companion"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        card, user = play(username="private-person", keep=True)
        # And through the API: resolve, ask, remember, plan, export.
        ctx = {"user": "private-person"}
        api.post("/api/v1/memory/resolve", {"context": ctx}, format="json")
        api.get(
            "/api/v1/memory/ask", {"user": "private-person", "q": "What is the basil plant's name?"}
        )
        api.post(
            "/api/v1/memory/remember",
            {"context": ctx, "text": "Priya works at Zanzibar Widgets."},
            format="json",
        )
        api.post(
            "/api/v1/memories",
            {"user": "private-person", "key": "Bad Key", "value": "Quokka-secret"},
            format="json",
        )
        api.get("/api/v1/users/private-person/export")
    finally:
        root.removeHandler(handler)
        for name, level in old_levels.items():
            logging.getLogger(name).setLevel(level)
    assert card.passed
    secrets = {
        v
        for v in MemoryRecord.objects.filter(user=user).values_list("value", flat=True)
        if len(v) >= 4
    }
    secrets |= {c for c in Message.objects.filter(user=user).values_list("content", flat=True)}
    secrets |= {"Zanzibar Widgets", "Quokka-secret", "Marlowe", "Harbor", "being rushed"}
    assert len(handler.records) > 20  # the loggers did speak
    for record in handler.records:
        text = (
            record.getMessage()
            + " "
            + repr(record.args)
            + " "
            + repr(getattr(record, "__dict__", {}))
        )
        for secret in secrets:
            assert secret not in text, (record.name, record.getMessage()[:200])


def _text_fields(model) -> list[str]:
    return [
        f.name
        for f in model._meta.get_fields()
        if isinstance(f, (models.TextField, models.JSONField))
        or (
            isinstance(f, models.CharField)
            and not f.choices
            and f.max_length
            and f.max_length > 64
            and f.name not in ("scope_id", "key", "capability", "idempotency_key")
        )
    ]


def test_it_keeps_free_text_out_of_the_decision_log():
    """D10: only the allow-listed fields; the JSON fields hold ids, and `requester` the id of
    the connection that asked (`connection:<id>`, §15 M3), never its name."""
    names = {f.name for f in DecisionLog._meta.get_fields() if f.concrete}
    assert names == {
        "id",
        "user",
        "capability",
        "requested_by",
        "requester",
        "effect",
        "reason",
        "rule_ids",
        "defaults_version",
        "user_version",
        "scope_ids",
        "decided_at",
    }
    assert set(_text_fields(DecisionLog)) == {"rule_ids", "scope_ids"}


def test_it_keeps_values_out_of_tombstones_and_retractions():
    """F1: a tombstone never holds the value; a value slot is a keyed hash."""
    for model in (Tombstone, SlotRetraction):
        names = {f.name for f in model._meta.get_fields() if f.concrete}
        assert "value" not in names
        assert _text_fields(model) == []
        assert model._meta.get_field("value_hash").max_length == 64
