"""The history of one scoped key (W11), for the history page and `GET /memory/history`: every
record of the slot in history order with its effective end and its E1 state, and which record
the resolver keeps now."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from config.clock import db_now
from config.errors import ValidationError
from conversations.domain import Context

from ..domain import MemoryRecord as DomainRecord
from ..domain import RecordState
from ..history import effective_ends, history_order
from ..models import MemoryRecord
from ..resolver import record_states, resolve
from .records import records_to_domain, registry_tombstones_secret
from .resolution import Remembered


def scope_id_valid(scope_id: str) -> bool:
    return bool(scope_id) and scope_id.split(":", 1)[0] in (
        "user",
        "character",
        "conversation",
        "scene",
    )


def history_records(user, key: str, scope_id: str) -> list[DomainRecord]:
    if not scope_id_valid(scope_id):
        raise ValidationError("Not a scope id.", field="scope")
    qs = MemoryRecord.objects.filter(user=user, key=key, scope_id=scope_id)
    return records_to_domain(qs, user.username)


@dataclasses.dataclass(frozen=True)
class SlotHistory:
    """W11 for one scoped key: every record in history order, with its effective end, and the
    resolver's answer at `now` for the same records."""

    records: list[DomainRecord]  # in history order (valid_from, version, id)
    ends: dict[str, datetime | None]
    remembered: Remembered
    many: bool
    label: str
    states: dict[str, RecordState] = dataclasses.field(default_factory=dict)  # E1, by id

    @property
    def current(self) -> set[str]:
        return {r.id for r in self.remembered.active}


def slot_history(user, *, key: str, scope_id: str, now: datetime | None = None) -> SlotHistory:
    """History of one scoped key (W11) for the pages: what `/memory/history` lists, plus which
    record is current now (R1–R6, with the tombstones of that key)."""
    if now is None:
        now = db_now()
    records = history_records(user, key, scope_id)
    keyed, tombstones, secret = registry_tombstones_secret(user, [key])
    many = keyed.is_many(key)
    resolutions = {}
    if records:
        scope = records[0].scope
        context = Context(
            user=user.username,
            character=scope.character,
            conversation=scope.conversation,
            scene=scope.scene,
            now=now,
        )
        resolutions[scope_id] = resolve(
            records, tombstones, context, many_keys=keyed.many_keys, secret=secret
        )
    remembered = Remembered(records, keyed, tombstones, resolutions, now)
    states = record_states(records, tombstones, now, many_keys=keyed.many_keys, secret=secret)
    return SlotHistory(
        history_order(records),
        effective_ends(records, many=many),
        remembered,
        many,
        keyed.label(key),
        states,
    )
