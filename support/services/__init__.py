"""What support staff do, as services: the support actions, the explain service, a turn's
stored plan read back, and the staff accounts, kept out of the admin classes so they can be
tested and reused (a management command, a future support API) without a request.

Private text (memory values, message content, conversation titles, a key's free part) is shown
only inside a reveal (`support.reveals`, SPEC §13 S1), and each page that shows it is logged
there.

One module per job: `actions` (forget, retract, normalise, revoke a rule, each with its
reason), `explain` (the resolver's and the policy engine's reasons in words), `turn_plan` (a
turn's stored plan, SPEC §7, as rows), `staff` (the Support group and staff accounts) and
`tokens` (runtime tokens revoked). The names below are what the admin, the pages, the commands
and the tests call."""

from .actions import (
    ACTION_PERMISSIONS,
    REASON_MAX,
    ActionOutcome,
    clean_reason,
    support_forget,
    support_normalise,
    support_retract,
    support_rule_revoke,
    support_user_erase,
)
from .explain import EXPLAIN_PERMISSION, ExplainResult, support_explain
from .staff import SUPPORT_GROUP, SUPPORT_GROUP_PERMISSIONS, support_group_ensure, support_staff_put
from .tokens import api_tokens_revoke
from .turn_plan import TurnPlan, turn_plan, turn_plan_time

__all__ = [
    "ACTION_PERMISSIONS",
    "EXPLAIN_PERMISSION",
    "REASON_MAX",
    "SUPPORT_GROUP",
    "SUPPORT_GROUP_PERMISSIONS",
    "ActionOutcome",
    "ExplainResult",
    "TurnPlan",
    "api_tokens_revoke",
    "clean_reason",
    "support_explain",
    "support_forget",
    "support_group_ensure",
    "support_normalise",
    "support_retract",
    "support_rule_revoke",
    "support_staff_put",
    "support_user_erase",
    "turn_plan",
    "turn_plan_time",
]
