"""The write path's statements (docs/DESIGN.md, habit 2): the write-state read of a batch of
asserts (records, tombstones, retractions and registry rows as one UNION ALL), the user's
tombstones with the user's secret, and the key registry. Each builds exactly the domain
objects the ORM path in `memory.selectors` builds; tests/memory/test_selectors.py compares
the two."""

from __future__ import annotations

from datetime import datetime

from config.storage import RawReader, parse_datetimes

from .domain import Tombstone as DomainTombstone
from .models import (
    KeyDefinition,
    MemoryProfile,
    MemoryRecord,
    MemorySource,
    MemoryWithholding,
    SlotRetraction,
    Tombstone,
)
from .storage import DATETIME_COLUMNS, RECORD_FIELDS, build_records, tombstones_from_rows

# Positions in a write-state row: the kind, then RECORD_FIELDS, then a source message id (or,
# in a row of kind "w", the id of a tombstone withholding the record, F7.2).
# Tombstone, retraction and registry rows reuse columns of a matching type.
_W_WIDTH = 1 + len(RECORD_FIELDS) + 1
_T_FORGOTTEN = 1 + RECORD_FIELDS.index("status_since")
_T_BLOCKS = 1 + RECORD_FIELDS.index("valid_from")
_X_AT = 1 + RECORD_FIELDS.index("retracted_at")


def _write_state_sql(reader: RawReader) -> str:
    """The write-state statement, with `{keys}` and `{scopes}` placeholders lists to fill."""
    column, name = reader.column, reader.name

    def row(kind: str, placed: dict[int, str]) -> str:
        cells = [f"'{kind}'"] + ["NULL"] * (_W_WIDTH - 1)
        for position, sql in placed.items():
            cells[position] = sql
        return ", ".join(cells)

    records = ", ".join(column(MemoryRecord, field, "r.") for field in RECORD_FIELDS)

    def at(field: str) -> int:
        return 1 + RECORD_FIELDS.index(field)

    tombstone = row(
        "t",
        {
            at("id"): column(Tombstone, "id", "t."),
            at("key"): name(Tombstone, "key", "t."),
            at("value"): name(Tombstone, "value_hash", "t."),
            at("scope_id"): name(Tombstone, "scope_id", "t."),
            _T_FORGOTTEN: column(Tombstone, "forgotten_at", "t."),
            _T_BLOCKS: column(Tombstone, "blocks_sources_before", "t."),
        },
    )
    retraction = row(
        "x",
        {
            at("key"): name(SlotRetraction, "key", "x."),
            at("value"): name(SlotRetraction, "value_hash", "x."),
            at("scope_id"): name(SlotRetraction, "scope_id", "x."),
            _X_AT: column(SlotRetraction, "retracted_at", "x."),
        },
    )
    withheld = row(
        "w",
        {
            at("id"): column(MemoryWithholding, "memory", "w."),
            _W_WIDTH - 1: column(MemoryWithholding, "tombstone", "w."),
        },
    )
    registry_row = row(
        "k",
        {
            at("key"): name(KeyDefinition, "key", "k."),
            at("value"): name(KeyDefinition, "cardinality", "k."),
        },
    )
    return (
        f"SELECT 'r', {records}, {column(MemorySource, 'message', 's.')} "
        f"FROM {reader.table(MemoryRecord)} r LEFT JOIN {reader.table(MemorySource)} s "
        f"ON {name(MemorySource, 'memory', 's.')} = {name(MemoryRecord, 'id', 'r.')} "
        f"WHERE {name(MemoryRecord, 'user', 'r.')} = %s "
        f"AND {name(MemoryRecord, 'key', 'r.')} IN ({{keys}}) "
        f"AND {name(MemoryRecord, 'scope_id', 'r.')} IN ({{scopes}}) "
        f"UNION ALL SELECT {withheld} FROM {reader.table(MemoryWithholding)} w "
        f"JOIN {reader.table(MemoryRecord)} r "
        f"ON {name(MemoryRecord, 'id', 'r.')} = {name(MemoryWithholding, 'memory', 'w.')} "
        f"WHERE {name(MemoryRecord, 'user', 'r.')} = %s "
        f"AND {name(MemoryRecord, 'key', 'r.')} IN ({{keys}}) "
        f"AND {name(MemoryRecord, 'scope_id', 'r.')} IN ({{scopes}}) "
        f"UNION ALL SELECT {tombstone} FROM {reader.table(Tombstone)} t "
        f"WHERE {name(Tombstone, 'user', 't.')} = %s "
        f"AND {name(Tombstone, 'key', 't.')} IN ({{keys}}) "
        f"UNION ALL SELECT {retraction} FROM {reader.table(SlotRetraction)} x "
        f"WHERE {name(SlotRetraction, 'user', 'x.')} = %s "
        f"AND {name(SlotRetraction, 'key', 'x.')} IN ({{keys}}) "
        f"UNION ALL SELECT {registry_row} FROM {reader.table(KeyDefinition)} k "
        f"WHERE {name(KeyDefinition, 'key', 'k.')} IN ({{keys}})"
    )


def _registry_tombstone_sql(reader: RawReader) -> dict[str, str]:
    """A user's tombstones (`{where}` over the alias `t`) with the user's secret, in the
    model's order; and the key registry."""
    column = reader.column
    tomb = ", ".join(
        column(Tombstone, name, "t.")
        for name in ("id", "scope_id", "key", "value_hash", "forgotten_at", "blocks_sources_before")
    )
    keys = ", ".join(
        column(KeyDefinition, name) for name in ("key", "cardinality", "label", "pinned")
    )
    return {
        "tombstones": (
            f"SELECT {tomb}, {column(MemoryProfile, 'secret', 'p.')} "
            f"FROM {reader.table(Tombstone)} t "
            f"LEFT JOIN {reader.table(MemoryProfile)} p "
            f"ON {reader.name(MemoryProfile, 'user', 'p.')} = "
            f"{reader.name(Tombstone, 'user', 't.')} "
            f"WHERE {{where}} ORDER BY {reader.order(Tombstone, 't.')}"
        ),
        "registry": f"SELECT {keys} FROM {reader.table(KeyDefinition)} "
        f"ORDER BY {reader.order(KeyDefinition)}",
    }


def read_write_state(
    reader: RawReader, user, records: dict, keys: list[str], scope_ids: list[str]
) -> tuple[list[DomainTombstone], dict, frozenset[str]]:
    """The write-state statement for `user`'s scoped keys: fills `records` (slot → its stored
    records, in version order) and answers (tombstones of the keys, the latest retraction per
    slot, which of the keys are `many`)."""
    sql = reader.sql("write-state", _write_state_sql)
    key_list = ", ".join(["%s"] * len(keys))
    scope_list = ", ".join(["%s"] * len(scope_ids))
    statement = sql.format(keys=key_list, scopes=scope_list)
    params = [user.pk, *keys, *scope_ids] * 2 + [user.pk, *keys, user.pk, *keys, *keys]
    rows = reader.fetch(statement, params)
    record_rows, sources, others = _rows_by_kind(rows)
    _fill_records(records, record_rows, sources, others["w"], user.username)
    many = {row[2] for row in others["k"] if row[3] == "many"}
    return (
        _tombstones(others["t"], user.username),
        _latest_retractions(others["x"]),
        frozenset(many),
    )


def _rows_by_kind(rows) -> tuple[dict[str, tuple], dict[str, list[str]], dict[str, list]]:
    """A write-state answer by kind: each record's row (once; a record has one row per source
    message) and its source message ids, then the tombstone ("t"), retraction ("x"),
    withholding ("w") and registry ("k") rows."""
    record_rows: dict[str, tuple] = {}
    sources: dict[str, list[str]] = {}
    others: dict[str, list] = {"t": [], "x": [], "w": [], "k": []}
    for row in rows:
        kind = row[0]
        if kind == "r":
            rid = row[1]
            if rid not in record_rows:
                record_rows[rid] = row[1:-1]
                sources[rid] = []
            if row[-1] is not None:
                sources[rid].append(row[-1])
        else:
            others[kind].append(row)
    return record_rows, sources, others


def _fill_records(
    records: dict,
    record_rows: dict[str, tuple],
    sources: dict[str, list[str]],
    withheld_rows: list,
    username: str,
) -> None:
    """Build the records (with the forgets withholding them, F7.2) into the slots of
    `records` that asked for them, each slot in version order."""
    withheld: dict[str, list[str]] = {}
    for row in withheld_rows:
        withheld.setdefault(row[1], []).append(row[-1])
    if record_rows:
        columns = list(zip(*record_rows.values(), strict=True))
        for index in DATETIME_COLUMNS:
            columns[index] = parse_datetimes(columns[index])
        built = build_records(
            columns,
            [sources[rid] for rid in record_rows],
            username,
            [withheld.get(rid) for rid in record_rows],
        )
        for record in built:
            found = records.get((record.scope_id, record.key))
            if found is not None:
                found.append(record)
    for found in records.values():
        found.sort(key=lambda r: r.version)


def _tombstones(tombstone_rows: list, username: str) -> list[DomainTombstone]:
    """The tombstones of the keys (F3), from the columns their rows reuse."""
    return tombstones_from_rows(
        ((r[1], r[5], r[2], r[3], r[_T_FORGOTTEN], r[_T_BLOCKS]) for r in tombstone_rows),
        username,
        parsed=False,
    )


def _latest_retractions(retraction_rows: list) -> dict[tuple[str, str, str], datetime]:
    """W4: the latest retraction per slot (scope, key, value hash or "")."""
    retractions: dict[tuple[str, str, str], datetime] = {}
    for row, at in zip(
        retraction_rows, parse_datetimes([row[_X_AT] for row in retraction_rows]), strict=True
    ):
        slot = (row[5], row[2], row[3] or "")
        if slot not in retractions or at > retractions[slot]:
            retractions[slot] = at
    return retractions


def read_tombstones_and_secret(
    reader: RawReader, user, keys
) -> tuple[list[DomainTombstone], bytes]:
    """`user`'s tombstones (of `keys`, or all) in the model's order, with the user's secret
    when one of them holds a value hash: one statement."""
    where, params = f"{reader.name(Tombstone, 'user', 't.')} = %s", [user.pk]
    if keys is not None:
        keys = list(keys)
        if not keys:
            where, params = "1 = 0", []
        else:
            where += (
                f" AND {reader.name(Tombstone, 'key', 't.')} IN ({', '.join(['%s'] * len(keys))})"
            )
            params += keys
    sql = reader.sql("registry-tombstones", _registry_tombstone_sql)
    rows = reader.fetch(sql["tombstones"].format(where=where), params)
    username = user.username
    tombstones = tombstones_from_rows(rows, username, parsed=False)
    secret = b""
    if any(t.value_hash for t in tombstones):
        hexed = rows[0][6]
        secret = bytes.fromhex(hexed) if hexed else b""
    return tombstones, secret


def read_registry(reader: RawReader) -> list[tuple]:
    """The whole key registry as (key, cardinality, label, pinned) rows: one statement."""
    return reader.fetch(reader.sql("registry-tombstones", _registry_tombstone_sql)["registry"], [])


# ---------------------------------------------------------------------------------------------
# A context's whole memory state as parts of one statement (the turn read, turns.storage)
