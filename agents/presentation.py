"""What the connections page shows of a connection, in words (pure of requests)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from config.pages import day, when

from .forms import ACCESS_WORDS


@dataclass(frozen=True)
class ConnectionRow:
    id: int
    name: str
    prefix: str
    access: str
    characters: str
    created: str
    expires: str
    last_used: str
    status: str  # active | expired | revoked

    @property
    def active(self) -> bool:
        return self.status == "active"


def connection_rows(connections, *, now: datetime) -> list[ConnectionRow]:
    rows = []
    for c in connections:
        if c.revoked_at is not None:
            status = "revoked"
        elif c.expires_at <= now:
            status = "expired"
        else:
            status = "active"
        names = (
            "All characters"
            if c.all_characters
            else ", ".join(sorted(ch.name for ch in c.characters.all()))
        )
        rows.append(
            ConnectionRow(
                id=c.pk,
                name=c.name,
                prefix=c.prefix,
                access=ACCESS_WORDS[c.access].split(":", 1)[0],
                characters=names,
                created=day(c.created_at),
                expires=day(c.expires_at),
                last_used=when(c.last_used_at) if c.last_used_at else "Never used",
                status=status,
            )
        )
    return rows
