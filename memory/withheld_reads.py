"""Which messages a forget withholds, as the message reads show it (SPEC §10 C4: every message
read carries `withheld: true|false`).

F6 (forgotten words leave the prompt) fills this: a withheld message is linked to the
tombstone that withholds it, and a reply may be held for its turn. Until those links exist no
message is withheld, so every read marks every message `withheld: false`. Every read of
messages asks here, once per page, so F6 changes this one function and nothing else."""

from __future__ import annotations

from collections.abc import Iterable


def withheld_message_ids(*, user, message_ids: Iterable[str]) -> set[str]:
    """The ids among `message_ids` (messages of `user`) that a forget withholds now (F6 fills
    this; until then none is)."""
    return set()
