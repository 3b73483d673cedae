"""The words every page uses for boundaries: capability names and what a decision did. The
boundaries page and the transcript's "What the companion used" (SPEC E2) share them, so one
capability has one name everywhere. Standard library only."""

from __future__ import annotations

# Seeded capabilities in plain words; others fall back to their name.
CAPABILITY_NAMES = {
    "tone.playful": "A playful tone",
    "topic.work": "Talking about your work",
    "relationship.advance": "A closer relationship",
    "media.voice": "Voice messages",
    "media.image": "Images",
}
DECISION_WORDS = {"allow": "Allowed", "deny": "Not allowed", "ask": "Asks you first"}


def capability_name(name: str) -> str:
    return CAPABILITY_NAMES.get(name) or name.replace("_", " ").replace(".", ": ").capitalize()
