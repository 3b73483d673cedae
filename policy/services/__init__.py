"""Policy writes (DESIGN habit 2): the only code that creates or changes rules, policy versions,
decision-log rows, answers and media jobs. Each service is one transaction, reads the database
clock once (SPEC §0) and leaves the meaning to the pure engine.

One module per job: `decisions` (D1–D7 logged, D10), `rules` (create, revoke, change, the
boundaries page's choice; D7, D11) and `answers` (D8). The services below are policy's write
API, named here for the other apps and the tests; policy's own modules import the module that
holds a name."""

from .answers import AnswerOutcome, decision_answer
from .decisions import (
    IDEMPOTENCY_KEY_MAX,
    DecisionOutcome,
    decide_and_log,
    decision_make,
    decisions_make,
    log_decision,
    require_choice,
)
from .rules import KEEP, boundary_set, rule_change, rule_create, rule_revoke

__all__ = [
    "IDEMPOTENCY_KEY_MAX",
    "KEEP",
    "AnswerOutcome",
    "DecisionOutcome",
    "boundary_set",
    "decide_and_log",
    "decision_answer",
    "decision_make",
    "decisions_make",
    "log_decision",
    "require_choice",
    "rule_change",
    "rule_create",
    "rule_revoke",
]
