"""The context a resolution or decision is made for (SPEC §0): who, where and when. Standard
library only (docs/DESIGN.md, habit 1): memory and policy build on it; what a scope is, its
ids and whether it applies here are `conversations.scopes`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .scopes import Scope, scope_applies, scope_ids_of


@dataclass(frozen=True, slots=True)
class Context:
    """What a resolution or decision is made for (SPEC §0). `now` is always given."""

    user: str
    character: str | None
    conversation: str | None
    now: datetime
    scene: str | None = None

    def scope_ids(self) -> list[str]:
        """The scope ids this context sees (R1), widest first."""
        return scope_ids_of(self.user, self.character, self.conversation, self.scene)

    def matches(self, scope: Scope, user: str) -> bool:
        """R1: does a record of this user and scope apply here?"""
        return user == self.user and scope_applies(
            scope, self.character, self.conversation, self.scene
        )
