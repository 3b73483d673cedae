"""What the apps above conversations keep of a user or a conversation (SPEC §7, §9).

Creating a user gives it memory's profile; deleting a conversation or a user first lets go of
what memory and support keep that points into its rows. Those apps sit above this one, so each
tells it what to do (`register`, from its `AppConfig.ready`, as `support.requesters` learns
names) and this app imports nothing of them. The writers of `conversations.services` call
`run` inside their transaction; the hooks run in the order the apps are installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

Moment = Literal["user_put", "user_delete", "conversation_delete"]
# Each hook takes the user (`user_put`, `user_delete`) or the conversation
# (`conversation_delete`) and writes in the caller's transaction.
Hook = Callable[[object], None]
_hooks: dict[str, list[Hook]] = {"user_put": [], "user_delete": [], "conversation_delete": []}


def register(moment: Moment, hook: Hook) -> None:
    hooks = _hooks[moment]
    if hook not in hooks:
        hooks.append(hook)


def run(moment: Moment, row) -> None:
    for hook in _hooks[moment]:
        hook(row)
