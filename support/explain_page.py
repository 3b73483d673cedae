"""The explain page's work (`/admin/support/explain/`): for the context a staff member asked
about, what the resolver and the policy engine say (`support.services.support_explain`), the
stored plan of a turn of that user when one is named, the rows the page shows — masked outside
a reveal of that user (S1) — and, inside one, the page's one row in the access log. The view
(`support.views.explain_view`) validates the form, calls `explain_form_page` and renders.

It writes nothing but that log row: no decision-log rows (D10 logs the runtime's questions;
explaining a context is not one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from config.errors import ValidationError
from config.pages import PagePresenter, form_errors_from

from . import reveals, selectors
from .display import explain_record_rows, plan_rows, reveal_url
from .reveals import Reveal
from .services import ExplainResult, TurnPlan, support_explain, turn_plan


@dataclass
class ExplainPage(PagePresenter):
    """What the explain page shows; empty until a context was explained. `turn_unknown`: the
    turn asked for is not one of the user's (a form error; the rest still shows)."""

    result: ExplainResult | None = None
    rows: list[dict] = field(default_factory=list)
    reveal: bool = False  # inside a reveal of the explained user: values and whole keys show
    reveal_link: str = ""  # a link that opens one, for staff who may
    conversations: list[tuple] = field(default_factory=list)
    plan: TurnPlan | None = None
    turn_unknown: bool = False

    not_shown = ("turn_unknown",)  # a form error, put on the form

    def derived(self) -> dict:
        rows = plan_rows(self.plan, reveal_link=self.reveal_link) if self.plan is not None else None
        return {"plan_rows": rows}


def _turn_plan(user, turn_id, *, reveal: bool) -> tuple[TurnPlan | None, bool]:
    """The stored plan of `turn_id` when it is a turn of `user` (None without a turn), and
    whether the turn asked for is unknown."""
    if not turn_id:
        return None, False
    turn = selectors.turn_of_user(user, turn_id)
    if turn is None:
        return None, True
    return turn_plan(turn, reveal=reveal), False


def support_explain_page(
    *,
    asked: Mapping,
    every_capability: Sequence[str],
    staff,
    reveal: Reveal | None,
    may_reveal: bool,
    back: str,
) -> ExplainPage:
    """Explain the context `asked` names (the explain form's cleaned data; no capability asked
    means `every_capability`) for `staff`, whose open reveal is `reveal` and who may open one
    when `may_reveal` (its link returns to `back`). Raises `ValidationError` (fields named
    `context.*`, or `memory`) for a context that does not load."""
    result = support_explain(
        user=asked["user"],
        character=asked["character"] or None,
        conversation=str(asked["conversation"]) if asked["conversation"] else None,
        scene=asked["scene"] or None,
        now=asked["now"],
        capabilities=asked["capabilities"] or list(every_capability),
        requested_by=asked["requested_by"],
        keys=asked["keys"] or None,
        memory=asked["memory"],
    )
    user = result.context.user
    revealed = reveal is not None and reveal.subject_id == user.pk
    plan, turn_unknown = _turn_plan(user, asked["turn"], reveal=revealed)
    # Ids to pick from, never titles: the conversation title is the user's own text.
    conversations = selectors.conversation_choices(user)
    reveal_link = reveal_url(user.get_username(), back) if not revealed and may_reveal else ""
    rows, shown = explain_record_rows(result.records, reveal=revealed, reveal_link=reveal_link)
    if revealed:
        shown.update(plan.revealed if plan is not None else ())
        reveals.reveal_page_log(
            reveal=reveal,
            staff=staff,
            view="explain",
            shown=len(shown) + (plan.shown if plan is not None else 0),
        )
    return ExplainPage(
        result=result,
        rows=rows,
        reveal=revealed,
        reveal_link=reveal_link,
        conversations=conversations,
        plan=plan,
        turn_unknown=turn_unknown,
    )


def explain_form_page(form, *, staff, reveal: Reveal | None, may_reveal: bool, back: str):
    """The page for the explain form `form`, valid: the context it names explained
    (`support_explain_page`). What does not load — a context (its fields named `context.*`),
    a memory, a turn not of the user — is an error on the form, and the rest still shows."""
    try:
        page = support_explain_page(
            asked=form.cleaned_data,
            every_capability=[c for c, _ in form.fields["capabilities"].choices],
            staff=staff,
            reveal=reveal,
            may_reveal=may_reveal,
            back=back,
        )
    except ValidationError as error:
        form_errors_from(form, error, fields={f"context.{name}": name for name in form.fields})
        return ExplainPage()
    if page.turn_unknown:
        form.add_error("turn", "Not a turn of this user.")
    return page
