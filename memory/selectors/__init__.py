"""Reads of memory state, one module per reader (SPEC §0: every query filters by user first).

- `records`: the record reads every other read builds on — rows as pure-core records,
  tombstones, the key registry, a record by id, SPEC §8's "it"; a context's state is read
  through the one door, `memory.state`, for the turn, the resolve endpoint, the write
  services and the pages.
- `resolution`: what is remembered now (SPEC §3, §5) — the resolve endpoint, prompt plans,
  support's explain and the pages.
- `history`: one scoped key's history (W11) — the history page and `GET /memory/history`.
- `states`: records with their effective state (E1) — `GET /memories`, the admin, the turns'
  answers.
- `pages`: what the memory, forgotten and transcript pages read beyond what is remembered now
  (F1, F2, F4) and the tombstones' API."""
