"""Boundary policy (SPEC §6, §10): capabilities, rules, per-user policy versions, decisions and
their log, answers to ASK and guarded media jobs.

Where the SPEC is silent, this app decides (and its tests pin it down):

- D4, agreeing top tier: `rule_ids` names every rule of the top tier (sorted), not only the
  first, so the user sees that revoking one of them alone would not change the decision.
- A rule without a user is a product default and only it has the `product-default` source
  (a check constraint enforces both directions).
- `GET /policy/rules` without `user` lists the product defaults; with it, every version of the
  user's rules (revoked ones too), paginated.
- Revoking a revoked rule is a no-op (200, no version bump); changing one is a 409. A change's
  successor starts when its predecessor is revoked unless a `valid_from` is given.
- D8: an answer's rule has the decision's `requested_by` (a consent answers the question that
  was asked) and starts at the answer's database clock. One answer per decision: the same
  answer again replays (`replayed: true`), another one is a 409. Only an `ask` decision can be
  answered (400 on `decision_id`); an unknown decision id is a 400 on `decision_id`.
- D8 on a named job: allow → `queued` (with `once`, it then runs unless the start decision is
  deny); deny → `rejected` (or `cancelled` if it was already queued), reason `user-denied`; an
  answer contradicting a job that already ran is a 409. The job must be the decision's user's
  and for the same capability.
- D9: media jobs are for `media.*` capabilities only. A job's `reason` is `<effect>:<reason>`
  of the decision that set its status (`deny:explicit-rule`, `ask:no-applicable-rule`). Start
  of a `needs-confirmation` job decides again too: allow → running, deny → cancelled, ask →
  unchanged. Completing a job that never ran is a 409; the same idempotency key with another
  request is `idempotency_key_reused` (409), with the same request a 200 replay.
- D10: the log's time (`decided_at`) is the valid time the decision was made for (the database
  clock unless the context named `now`); its scope ids are those of the context (SPEC §1), and
  an answer recovers the decision's character, conversation and scene from them.
- `POST /policy/decide` accepts `"explain": true` and then adds, per rule of the capability,
  why it was or was not a candidate.
"""
