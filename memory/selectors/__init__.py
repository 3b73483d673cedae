"""Reads of memory state, one module per reader (SPEC §0: every query filters by user first).

- `records`: the record reads every other read builds on — rows as pure-core records, the
  candidate records of a context, tombstones, the key registry, a record by id, SPEC §8's "it";
  the turn's state (`memory.state`), turn creation and export read them directly.
- `write_state`: what the write path (`memory.services`, `memory.services.teaching`) decides
  against.
- `resolution`: what is remembered now (SPEC §3, §5) — the resolve endpoint, prompt plans,
  support's explain and the pages.
- `history`: one scoped key's history (W11) — the history page and `GET /memory/history`.
- `states`: records with their effective state (E1) — `GET /memories`, the admin, the turns'
  answers.
- `pages`: what the memory, forgotten and transcript pages read beyond what is remembered now
  (F1, F2, F4) and the tombstones' API."""
