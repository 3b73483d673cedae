import datetime as dt
import importlib

import pytest

from tests.conftest import character_fixture, user_fixture
from tests.factories import ConversationFactory, at

SEED = importlib.import_module("policy.migrations.0002_seed_capabilities")


@pytest.fixture
def capabilities(db):
    """The seeded catalog. A transactional test elsewhere may have flushed the migration's
    rows, so put them back if they are missing."""
    from policy.models import Capability, DefaultsPolicyVersion

    for name, question in SEED.CAPABILITIES:
        Capability.objects.get_or_create(name=name, defaults={"question": question})
    DefaultsPolicyVersion.objects.get_or_create(pk=1)
    return [name for name, _ in SEED.CAPABILITIES]


# The policy tests' own world: wren talks to Rowan (slug `rowan`) and Marlowe.
wren = user_fixture("wren")
rowan = character_fixture("rowan", "Captain Rowan")
marlowe = character_fixture("marlowe", "Marlowe")


@pytest.fixture
def conversation(wren, rowan):
    return ConversationFactory(user=wren, character=rowan)


class Clock:
    """A controllable database clock for the policy services (SPEC §0: they read it once per
    transaction through `db_now`)."""

    def __init__(self, now: dt.datetime):
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta) -> dt.datetime:
        self.now += dt.timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(at("2026-08-05T12:00"))
    monkeypatch.setattr("policy.services.rules.db_now", clock)
    monkeypatch.setattr("policy.services.answers.db_now", clock)
    monkeypatch.setattr("policy.media_jobs.db_now", clock)
    monkeypatch.setattr("conversations.selectors.db_now", clock)
    return clock


@pytest.fixture
def context_of(capabilities):
    """`context_of(conversation, scene=…, now=…)` → a LoadedContext, as the API would load it."""
    from conversations.selectors import load_context

    def make(conversation, *, scene=None, now=None, character=None, user=None):
        data = {"user": user or conversation.user.username, "conversation": str(conversation.pk)}
        if character is not None:
            data["character"] = character
        if scene is not None:
            data["scene"] = scene
        if now is not None:
            data["now"] = now
        return load_context(data)

    return make
