"""Who asked for a decision beyond its role (`DecisionLog.requester`, SPEC §15 M3):
`connection:<id>` for an assistant's personal connection, empty for the chat runtime. Support
shows a requester by its name and id. The app that owns connections sits above support, so it
tells support the names (`register`, from its `AppConfig.ready`) and support imports nothing of
it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

# Each namer takes requester ids and answers the name of those it knows, in one query.
Namer = Callable[[set[str]], dict[str, str]]
_namers: list[Namer] = []


def register(namer: Namer) -> None:
    if namer not in _namers:
        _namers.append(namer)


def names(requesters: Iterable[str]) -> dict[str, str]:
    """The name of each requester a registered namer knows; no query for none."""
    wanted = {requester for requester in requesters if requester}
    found: dict[str, str] = {}
    for namer in _namers if wanted else ():
        found.update(namer(wanted))
    return found


def label(requester: str, name: str | None) -> str:
    """`Desk (connection:12)`; the id alone when no namer knows it; `-` for the runtime."""
    if not requester:
        return "-"
    return f"{name} ({requester})" if name else requester
